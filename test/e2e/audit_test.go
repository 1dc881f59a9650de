package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// awaitHostedAuditEvent waits until the audit-logs container of a
// kube-apiserver pod of the control-plane namespace ns shows, as `kubectl
// logs <pod> -c audit-logs` does, the event of verb on the object
// namespace/name of resource in the hosted cluster, made by user.
func awaitHostedAuditEvent(t *testing.T, ns, verb, resource, namespace, name, user string) {
	t.Helper()
	c, err := kubernetes.NewForConfig(lc.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, func() error {
		pods, err := c.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + kubeapiserver.Name})
		if err != nil {
			return err
		}
		for _, pod := range pods.Items {
			raw, err := c.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: kubeapiserver.AuditLogsContainer}).DoRaw(t.Context())
			if err != nil {
				continue
			}
			scanner := bufio.NewScanner(strings.NewReader(string(raw)))
			scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
			for scanner.Scan() {
				var e auditv1.Event
				if json.Unmarshal(scanner.Bytes(), &e) != nil || e.ObjectRef == nil {
					continue
				}
				if e.Verb == verb && e.ObjectRef.Resource == resource && e.ObjectRef.Namespace == namespace &&
					e.ObjectRef.Name == name && e.User.Username == user && e.Stage == auditv1.StageResponseComplete {
					return nil
				}
			}
		}
		return fmt.Errorf("no kube-apiserver pod's audit-logs container shows %s %s %s/%s by %s yet", verb, resource, namespace, name, user)
	})
}
