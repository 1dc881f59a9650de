package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/hypershift-le/hypershift/test/auditlog"
)

// auditPolicy records every request at Metadata level once its response is
// complete: who did what to which object, and the status code; pod
// creations also keep the created pod, and pod status writes the status
// (the phase a kubelet reports).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
# Pod creations keep their response, which names a pod made from generateName.
- level: RequestResponse
  verbs: ["create"]
  resources: [{group: "", resources: ["pods"]}]
# Pod status writes keep their response, which shows the phase.
- level: RequestResponse
  verbs: ["patch", "update"]
  resources: [{group: "", resources: ["pods/status"]}]
- level: Metadata
`

func (e *Env) configureAuditLog() error {
	policyPath := filepath.Join(e.tempDir, "audit-policy.yaml")
	if err := os.WriteFile(policyPath, []byte(auditPolicy), 0o600); err != nil {
		return fmt.Errorf("failed to write the audit policy: %w", err)
	}
	e.AuditLogPath = filepath.Join(e.tempDir, "audit.log")
	e.env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policyPath).
		Set("audit-log-path", e.AuditLogPath).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking").
		Set("audit-log-maxbackup", "0")
	if e.auditLogMaxSizeMB > 0 {
		e.env.ControlPlane.GetAPIServer().Configure().Set("audit-log-maxsize", strconv.Itoa(e.auditLogMaxSizeMB))
	}
	return nil
}

// AuditEvents reads, with the auditlog oracle, every event the audit log holds so far, in order,
// backups of a rotated log first (the API server rotates it at
// --audit-log-maxsize, 100 MB by default: a long run would otherwise lose
// its early evidence).
func (e *Env) AuditEvents() ([]auditv1.Event, error) {
	if e.AuditLogPath == "" {
		return nil, fmt.Errorf("the audit log is off: start the environment with Options.AuditLog")
	}
	return auditlog.Read(e.AuditLogPath)
}
