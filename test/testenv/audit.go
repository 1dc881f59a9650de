package testenv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

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
	if e.auditLogMaxSizeMB > 0 {
		e.env.ControlPlane.GetAPIServer().Configure().Set("audit-log-maxsize", strconv.Itoa(e.auditLogMaxSizeMB))
	}
	return nil
}

// AuditEvents reads every event the audit log holds so far, in order,
// backups of a rotated log first (the API server rotates it at
// --audit-log-maxsize, 100 MB by default: a long run would otherwise lose
// its early evidence).
func (e *Env) AuditEvents() ([]auditv1.Event, error) {
	if e.AuditLogPath == "" {
		return nil, fmt.Errorf("the audit log is off: start the environment with Options.AuditLog")
	}
	return ReadAuditLog(e.AuditLogPath)
}

// ReadAuditLog reads the JSON audit log at path and the backups the API
// server rotated out of it (<name>-<timestamp><ext> beside it, oldest
// first), in order.
func ReadAuditLog(path string) ([]auditv1.Event, error) {
	ext := filepath.Ext(path)
	backups, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, fmt.Errorf("failed to list the audit log's backups: %w", err)
	}
	sort.Strings(backups) // the timestamps sort in time order
	var events []auditv1.Event
	for _, file := range append(backups, path) {
		read, err := readAuditFile(file)
		if err != nil {
			return nil, err
		}
		events = append(events, read...)
	}
	return events, nil
}

func readAuditFile(path string) ([]auditv1.Event, error) {
	f, err := os.Open(path)
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
		return nil, fmt.Errorf("failed to read the audit log %s: %w", path, err)
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
