package hostedcluster

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
)

// FenceProbe asks the API server how it judges a write by a
// control-plane-operator pod, without writing anything.
type FenceProbe interface {
	// Judge sends a server-side dry-run create in namespace as the
	// control-plane-operator pod named pod.
	Judge(ctx context.Context, namespace, pod string) (FenceJudgement, error)
}

// FenceJudgement is how the API server judged a probe.
type FenceJudgement struct {
	// Admitted is true when nothing refused the write.
	Admitted bool
	// Fenced is true when the fencing policy refused it; Holder is then
	// the holder the API server judged against ("" for none), and Binding
	// the binding that refused it (the first of those that did, in no
	// fixed order), when the refusal names one.
	Fenced  bool
	Holder  string
	Binding string
}

// fenceProbeName is the probe's object, created in dry-run only.
const fenceProbeName = "hypershift-fence-probe"

// ImpersonatingProbe judges with the operator's own credentials,
// impersonating the control-plane-operator's ServiceAccount and a pod name
// (the operator's ClusterRole may impersonate exactly those).
type ImpersonatingProbe struct {
	// Config is the operator's REST config.
	Config *rest.Config
}

// Judge implements FenceProbe with a dry-run create of a headless Service,
// which the control-plane-operator's Role allows and which allocates
// nothing.
func (p ImpersonatingProbe) Judge(ctx context.Context, namespace, pod string) (FenceJudgement, error) {
	cfg := rest.CopyConfig(p.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + hyperv1.ControlPlaneOperatorName,
		Extra:    map[string][]string{render.PodNameExtra: {pod}},
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return FenceJudgement{}, fmt.Errorf("failed to create the fence probe's client: %w", err)
	}
	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: fenceProbeName},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 1}}},
	}
	_, err = clientset.CoreV1().Services(namespace).Create(ctx, service, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldOwner})
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return FenceJudgement{Admitted: true}, nil
	}
	if holder, ok := render.FencedHolder(err.Error()); ok {
		return FenceJudgement{Fenced: true, Holder: holder, Binding: refusingBinding(err.Error())}, nil
	}
	return FenceJudgement{}, fmt.Errorf("failed to probe the fence of namespace %s: %w", namespace, err)
}

// refusingBinding is the binding an admission policy's refusal names
// ("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: ..."),
// "" when it names none.
func refusingBinding(message string) string {
	const start = " with binding '"
	i := strings.Index(message, start)
	if i < 0 {
		return ""
	}
	rest := message[i+len(start):]
	j := strings.Index(rest, "'")
	if j < 0 {
		return ""
	}
	return rest[:j]
}
