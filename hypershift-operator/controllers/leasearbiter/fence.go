package leasearbiter

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
)

// releaseAfter decides when the gone holder of Lease key may be released:
// at once when the namespace is fenced; without a fence, only once its pod
// object has been gone for TokenWindow (wait says how long is left), and
// never while the pod object exists (release is false).
func (r *Reconciler) releaseAfter(ctx context.Context, hc *hyperv1.HostedCluster, key types.NamespacedName, holder string, podExists bool) (wait time.Duration, release bool, err error) {
	fenced, err := r.fenced(ctx, hc, key.Namespace)
	if err != nil || fenced {
		return 0, fenced, err
	}
	log := ctrl.LoggerFrom(ctx)
	if podExists {
		log.V(1).Info("Not releasing the Lease: its holder's pod object still exists, so its token still authenticates, and the fence is not in force", "holder", holder)
		return 0, false, nil
	}
	goneFor := r.now().Sub(r.holders.get(key, holder).goneAt)
	if left := TokenWindow - goneFor; left > 0 {
		log.V(1).Info("Waiting to release the Lease until the gone pod's token no longer authenticates: the fence is not in force", "holder", holder, "wait", left)
		return left, false, nil
	}
	return 0, true, nil
}

// DefaultRestartGrace is how long a holder's container may read exited,
// its pod running, before the arbiter counts it stopped, as if the kubelet
// reported its back-off: the kubelet restarts a container that crashed
// for the first time at once (its status reads exited for two or three
// seconds, and the new process renews the Lease it holds), while one that
// crashed again soon after waits out a back-off that its status reports
// only at the kubelet's next sync of the pod, about 10s later. The exit
// time is the node's clock: a node clock behind the operator's shortens
// the grace, which may only hand over a leader that was about to resume;
// so does the second the status's whole-second exit time may lose.
const DefaultRestartGrace = 6 * time.Second

// releaseIfStopped releases the Lease of a holder whose pod runs but whose
// container exited and waits in the kubelet's restart back-off (a leader
// in a crash loop), only where the fence is seen in force. No process of
// the holder runs then, but one starts under the same identity when the
// back-off ends, and may find the Lease still naming it: without the
// fence, a status that lags that start could have the parent release a
// live leader whose writes nothing stops. With the fence, its writes are
// refused once the Lease names another, and the restarted process follows.
// Without the fence the Lease runs its duration, or the process comes back
// and renews it.
func (r *Reconciler) releaseIfStopped(ctx context.Context, hc *hyperv1.HostedCluster, lease *coordinationv1.Lease, holder, reason string) (ctrl.Result, error) {
	fenced, err := r.fenced(ctx, hc, lease.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !fenced {
		ctrl.LoggerFrom(ctx).Info("Not releasing the Lease of a holder whose container waits to restart: the fence is not in force, so the Lease runs its duration", "holder", holder, "pod", reason)
		return ctrl.Result{}, nil
	}
	return r.release(ctx, hc, lease, reason)
}

// fenced reports whether the API server is seen to refuse, in namespace,
// writes by control-plane-operator pods the Lease does not name: the
// operator fences, the HostedCluster's LeaderFencing condition (observed
// by probing the API server) is True, the fencing policy and its binding
// exist, and the namespace carries the label the binding selects.
func (r *Reconciler) fenced(ctx context.Context, hc *hyperv1.HostedCluster, namespace string) (bool, error) {
	if !r.Fencing || !meta.IsStatusConditionPresentAndEqual(hc.Status.Conditions, hyperv1.LeaderFencing, metav1.ConditionTrue) {
		return false, nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: render.FencingPolicyName}},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: render.FencingBindingName}},
		ns,
	} {
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			if client.IgnoreNotFound(err) == nil {
				return false, nil
			}
			return false, fmt.Errorf("failed to get %s: %w", obj.GetName(), err)
		}
	}
	return ns.Labels[render.LeaderFencingLabel] == "true", nil
}
