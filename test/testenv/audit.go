package testenv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// auditPolicy records every request at Metadata level once its response is
// complete: who did what to which object, and the status code; pod
// creations also keep the created pod.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
# Pod creations keep their response, which names a pod made from generateName.
- level: RequestResponse
  verbs: ["create"]
  resources: [{group: "", resources: ["pods"]}]
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
	return nil
}

// AuditEvents reads every event the audit log holds so far, in order.
func (e *Env) AuditEvents() ([]auditv1.Event, error) {
	if e.AuditLogPath == "" {
		return nil, fmt.Errorf("the audit log is off: start the environment with Options.AuditLog")
	}
	f, err := os.Open(e.AuditLogPath)
	if err != nil {
		return nil, fmt.Errorf("failed to open the audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	var events []auditv1.Event
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		var event auditv1.Event
		if err := json.Unmarshal(scanner.Bytes(), &event); err != nil {
			return nil, fmt.Errorf("failed to decode audit event %q: %w", scanner.Text(), err)
		}
		events = append(events, event)
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("failed to read the audit log: %w", err)
	}
	return events, nil
}

// IsWrite reports whether an audit event records a mutating request.
func IsWrite(event auditv1.Event) bool {
	switch event.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// Succeeded reports whether an audited request got a 2xx response.
func Succeeded(event auditv1.Event) bool {
	return event.ResponseStatus != nil && event.ResponseStatus.Code >= 200 && event.ResponseStatus.Code < 300
}
