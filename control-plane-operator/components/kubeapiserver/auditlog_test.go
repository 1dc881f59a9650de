package kubeapiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/control-plane-operator/auditlogs"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// marker is in every body the test writes: a body the policy must not
// log must not show it anywhere in the log.
const marker = "audit-marker-5f3a9c"

// TestAuditLogOfARealAPIServer starts the real kube-apiserver with the
// audit flags of the rendered Deployment and the policy of the rendered
// ConfigMap (the pod's paths moved to a temporary directory), writes to
// it as a user of the hosted cluster would, and finds those writes in the
// log, with bodies where the profile asks for them and never for a Secret
// or a ConfigMap; the audit-logs container's copier, following the same
// file, shows them too. With None, the API server writes no log at all.
func TestAuditLogOfARealAPIServer(t *testing.T) {
	for _, profile := range profiles {
		t.Run(string(profile), func(t *testing.T) {
			d, cm := render(t, withAudit(&configv1.Audit{Profile: profile}))
			dir := t.TempDir()
			flags, logPath := localAuditFlags(t, d, cm, dir)
			env, err := testenv.Start(t.Context(), testenv.Options{SkipAdmissionPolicies: true, APIServerFlags: flags})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := env.Stop(); err != nil {
					t.Error(err)
				}
			})
			copied := &syncBuffer{}
			if logPath != "" {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- auditlogs.Follow(ctx, logPath, copied, 50*time.Millisecond) }()
				t.Cleanup(func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("the audit-logs copier: %v", err)
					}
				})
			}

			ns := writeAsAUser(t, env.Client)
			if profile == configv1.NoneAuditProfileType {
				checkNoAuditLog(t, flags, dir)
				return
			}
			var events []auditv1.Event
			testutil.Eventually(t, 30*time.Second, func() error {
				events, err = auditlog.Read(logPath)
				if err != nil {
					return err
				}
				if find(events, "get", "serviceaccounts", ns) == nil {
					return errors.New("the service account's read is not in the audit log yet")
				}
				return nil
			})
			checkLevels(t, profile, events, ns)
			raw, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(raw, []byte(marker+"-secret")) + bytes.Count(raw, []byte(marker+"-configmap")); n > 0 {
				t.Errorf("a Secret's or ConfigMap's data shows %d times in the audit log", n)
			}
			write := find(events, "create", "configmaps", ns)
			testutil.Eventually(t, 10*time.Second, func() error {
				if !strings.Contains(copied.String(), string(write.AuditID)) {
					return fmt.Errorf("the audit-logs copier has not shown the ConfigMap's creation (%s) yet", write.AuditID)
				}
				return nil
			})
		})
	}
}

// localAuditFlags returns the kube-apiserver container's audit flags, the
// paths of the pod's audit volumes moved under dir (the policy volume
// filled from cm), and where the log is then written; none for a
// Deployment without audit flags.
func localAuditFlags(t *testing.T, d *appsv1.Deployment, cm *corev1.ConfigMap, dir string) (map[string]string, string) {
	t.Helper()
	pod := d.Spec.Template.Spec
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	moved := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		v := volumes[m.Name]
		switch {
		case v.ConfigMap != nil && v.ConfigMap.Name == cm.Name:
			local := filepath.Join(dir, m.Name)
			if err := os.MkdirAll(local, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, item := range v.ConfigMap.Items {
				if err := os.WriteFile(filepath.Join(local, item.Path), []byte(cm.Data[item.Key]), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			moved[m.MountPath] = local
		case v.EmptyDir != nil:
			moved[m.MountPath] = filepath.Join(dir, m.Name)
			if err := os.MkdirAll(moved[m.MountPath], 0o700); err != nil {
				t.Fatal(err)
			}
		}
	}
	flags := map[string]string{}
	for _, arg := range pod.Containers[0].Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if !strings.HasPrefix(name, "audit-") {
			continue
		}
		for mountPath, local := range moved {
			if strings.HasPrefix(value, mountPath+"/") {
				value = local + strings.TrimPrefix(value, mountPath)
			}
		}
		if !strings.HasPrefix(value, dir) && strings.HasPrefix(value, "/") {
			t.Fatalf("--%s=%s is on no volume of the pod", name, value)
		}
		flags[name] = value
	}
	return flags, flags["audit-log-path"]
}

// writeAsAUser creates, in a new namespace, a ConfigMap and a Secret whose
// data hold the marker, and a ServiceAccount labelled with it, and reads
// the ServiceAccount back. It returns the namespace.
func writeAsAUser(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "audit-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	meta := metav1.ObjectMeta{Namespace: ns.Name, Name: "audited", Labels: map[string]string{"marker": marker}}
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"value": marker + "-configmap"}},
		&corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"value": marker + "-secret"}},
		&corev1.ServiceAccount{ObjectMeta: meta},
	} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(&corev1.ServiceAccount{ObjectMeta: meta}), &corev1.ServiceAccount{}); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// checkLevels checks each write's and read's event: its level, and
// whether it carries the bodies.
func checkLevels(t *testing.T, profile configv1.AuditProfileType, events []auditv1.Event, ns string) {
	t.Helper()
	bodies := func(e *auditv1.Event) bool {
		return e.Level == auditv1.LevelRequestResponse && (e.RequestObject != nil || e.ResponseObject != nil)
	}
	for _, tt := range []struct {
		verb, resource string
		wantBodies     bool
	}{
		{"create", "configmaps", false},
		{"create", "secrets", false},
		{"create", "serviceaccounts", profile != configv1.DefaultAuditProfileType},
		{"get", "serviceaccounts", profile == configv1.AllRequestBodiesAuditProfileType},
	} {
		e := find(events, tt.verb, tt.resource, ns)
		switch {
		case e == nil:
			t.Errorf("%s %s: not in the audit log", tt.verb, tt.resource)
		case e.User.Username == "" || e.ResponseStatus == nil || e.ResponseStatus.Code >= 300:
			t.Errorf("%s %s: user %q, status %v: the event does not say who did it and how it went", tt.verb, tt.resource, e.User.Username, e.ResponseStatus)
		case bodies(e) != tt.wantBodies:
			t.Errorf("%s %s: level %s, bodies %t; want bodies %t", tt.verb, tt.resource, e.Level, bodies(e), tt.wantBodies)
		case tt.wantBodies && !bytes.Contains(eventBody(e), []byte(marker)):
			t.Errorf("%s %s: the body does not show the object", tt.verb, tt.resource)
		}
	}
}

func eventBody(e *auditv1.Event) []byte {
	var b []byte
	if e.RequestObject != nil {
		b = append(b, e.RequestObject.Raw...)
	}
	if e.ResponseObject != nil {
		b = append(b, e.ResponseObject.Raw...)
	}
	return b
}

// find returns the event of verb on the object "audited" of resource in
// ns, or nil.
func find(events []auditv1.Event, verb, resource, ns string) *auditv1.Event {
	for i, e := range events {
		if ref := e.ObjectRef; e.Verb == verb && ref != nil && ref.Resource == resource && ref.Namespace == ns &&
			ref.Name == "audited" && ref.Subresource == "" && e.Stage == auditv1.StageResponseComplete {
			return &events[i]
		}
	}
	return nil
}

// checkNoAuditLog fails the test if the API server was given an audit
// flag or wrote anything under dir.
func checkNoAuditLog(t *testing.T, flags map[string]string, dir string) {
	t.Helper()
	if len(flags) > 0 {
		t.Errorf("with profile None, the API server gets audit flags %v", flags)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("with profile None, %s was written", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer the copier writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
