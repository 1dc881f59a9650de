package kubeapiserver

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component/componenttest"
)

// TestResourcesFollowTheAnnotations: HyperShift's request override and Go
// runtime annotations reach the kube-apiserver's container; one that does
// not parse is refused in the user's words.
func TestResourcesFollowTheAnnotations(t *testing.T) {
	in := componenttest.Inputs(hyperv1.SingleReplica)
	in.HostedControlPlane.Annotations = map[string]string{
		hyperv1.ResourceRequestOverrideAnnotationPrefix + "/kube-apiserver.kube-apiserver": "memory=2Gi,cpu=500m",
		hyperv1.ResourceRequestOverrideAnnotationPrefix + "/kube-apiserver.audit-logs":     "memory=32Mi",
		hyperv1.KubeAPIServerGOGCAnnotation:                                                "75",
	}
	w, err := Component{}.Workload(in)
	if err != nil {
		t.Fatal(err)
	}
	containers := map[string]corev1.Container{}
	for _, c := range w.Object.(*appsv1.Deployment).Spec.Template.Spec.Containers {
		containers[c.Name] = c
	}
	kas := containers[Name]
	memory, cpu, limit := kas.Resources.Requests[corev1.ResourceMemory], kas.Resources.Requests[corev1.ResourceCPU], kas.Resources.Limits[corev1.ResourceMemory]
	if memory.String() != "2Gi" || cpu.String() != "500m" || limit.String() != "2Gi" {
		t.Errorf("kube-apiserver requests memory %s cpu %s, limit %s; want 2Gi, 500m and the limit raised to 2Gi", &memory, &cpu, &limit)
	}
	env := map[string]string{}
	for _, e := range kas.Env {
		env[e.Name] = e.Value
	}
	if env["GOMEMLIMIT"] != "1717986918" || env["GOGC"] != "75" {
		t.Errorf("GOMEMLIMIT %q GOGC %q, want 80%% of the raised limit (1717986918) and 75", env["GOMEMLIMIT"], env["GOGC"])
	}
	if m := containers[AuditLogsContainer].Resources.Requests[corev1.ResourceMemory]; m.String() != "32Mi" {
		t.Errorf("audit-logs requests memory %s, want 32Mi", &m)
	}

	in.HostedControlPlane.Annotations = map[string]string{hyperv1.KubeAPIServerGoMemoryLimitAnnotation: "a lot"}
	if _, err := (Component{}).Workload(in); err == nil || !strings.Contains(err.Error(), hyperv1.KubeAPIServerGoMemoryLimitAnnotation) {
		t.Errorf("a GOMEMLIMIT annotation that does not parse: error %v, want one naming the annotation", err)
	}
}
