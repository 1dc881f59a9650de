package podmachine

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
)

// FieldOwner is the field manager of the controller's writes.
const FieldOwner = "control-plane-operator"

// Reasons of a PodMachine's Ready condition: infrav1's, kept here for
// those that name them from this package.
const (
	WaitingForMachineReason       = infrav1.WaitingForMachineReason
	WaitingForBootstrapDataReason = infrav1.WaitingForBootstrapDataReason
	PodPendingReason              = infrav1.PodPendingReason
	PodRunningReason              = infrav1.PodRunningReason
	PodFailedReason               = infrav1.PodFailedReason
)

// deletePoll is how often a deleted machine's Pod is looked at until it is
// gone (its deletion is watched too).
const deletePoll = 5 * time.Second

// Reconciler runs the PodMachines of one control-plane namespace.
type Reconciler struct {
	// Client reads and writes the control-plane namespace.
	Client client.Client
	// HostedControlPlane names the HostedControlPlane the machines are of.
	HostedControlPlane string
	// OperateOnReleaseImage is the release this control-plane-operator was
	// rolled out for: an outdated one makes and removes no machine.
	OperateOnReleaseImage string
}

// SetupWithManager watches PodMachines, their Pods and the Machines that
// own them (a Machine gets its bootstrap data after its PodMachine).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("podmachine").
		For(&infrav1.PodMachine{}).
		Owns(&corev1.Pod{}).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			m := obj.(*clusterv1.Machine)
			ref := m.Spec.InfrastructureRef
			if ref.APIGroup != infrav1.GroupVersion.Group || ref.Kind != "PodMachine" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: ref.Name}}}
		})).
		Complete(r)
}

// Reconcile runs one machine.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pm := &infrav1.PodMachine{}
	if err := r.Client.Get(ctx, req.NamespacedName, pm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	hcp, err := r.actingFor(ctx, req.Namespace)
	if err != nil || hcp == nil {
		return ctrl.Result{}, err
	}
	if !pm.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, pm)
	}
	if !controllerutil.ContainsFinalizer(pm, hyperv1.Finalizer) || pm.Spec.ProviderID == "" {
		patch := client.MergeFromWithOptions(pm.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(pm, hyperv1.Finalizer)
		pm.Spec.ProviderID = ProviderID(pm.Namespace, pm.Name)
		if err := r.Client.Patch(ctx, pm, patch, client.FieldOwner(FieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to set the finalizer and provider ID of PodMachine %s: %w", pm.Name, err)
		}
	}
	original := pm.Status.DeepCopy()
	err = r.reconcileNormal(ctx, pm, hcp)
	if !equality.Semantic.DeepEqual(*original, pm.Status) {
		if statusErr := r.Client.Status().Update(ctx, pm, client.FieldOwner(FieldOwner)); statusErr != nil && !apierrors.IsNotFound(statusErr) {
			err = errors.Join(err, fmt.Errorf("failed to update the status of PodMachine %s: %w", pm.Name, statusErr))
		}
	}
	return ctrl.Result{}, err
}

// actingFor is the HostedControlPlane the machines are of, when this
// control-plane-operator may make and remove machines; nil when it was
// rolled out for another release than its HostedControlPlane's (its
// successor does), or while the control plane is paused.
func (r *Reconciler) actingFor(ctx context.Context, namespace string) (*hyperv1.HostedControlPlane, error) {
	hcp := &hyperv1.HostedControlPlane{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: r.HostedControlPlane}, hcp); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if r.OperateOnReleaseImage != "" && r.OperateOnReleaseImage != hcp.Spec.ReleaseImage {
		return nil, nil
	}
	if paused, _, err := hyperv1.ParsePausedUntil(hcp.Spec.PausedUntil, time.Now()); err != nil || paused {
		return nil, nil
	}
	return hcp, nil
}

// reconcileNormal runs the machine's Pod once its Machine has bootstrap
// data, and reports the Pod.
func (r *Reconciler) reconcileNormal(ctx context.Context, pm *infrav1.PodMachine, hcp *hyperv1.HostedControlPlane) error {
	ready := func(status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&pm.Status.Conditions, metav1.Condition{
			Type: infrav1.ReadyCondition, Status: status, Reason: reason, Message: message, ObservedGeneration: pm.Generation,
		})
	}
	machine, err := r.owner(ctx, pm)
	if err != nil {
		return err
	}
	if machine == nil {
		ready(metav1.ConditionFalse, infrav1.WaitingForMachineReason, "No Machine owns the PodMachine yet")
		return nil
	}
	if machine.Spec.Bootstrap.DataSecretName == nil || *machine.Spec.Bootstrap.DataSecretName == "" {
		ready(metav1.ConditionFalse, infrav1.WaitingForBootstrapDataReason, "Machine "+machine.Name+" has no bootstrap data yet")
		return nil
	}
	pod := &corev1.Pod{}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(pm), pod); {
	case apierrors.IsNotFound(err):
		podNetwork, err := hcp.Spec.Networking.PodNetworkRange()
		if err != nil {
			ready(metav1.ConditionFalse, infrav1.PodPendingReason, err.Error())
			return nil // the range is immutable: nothing to retry
		}
		pod = MachinePod(pm, *machine.Spec.Bootstrap.DataSecretName, hyperv1.PullSecretName, podNetwork)
		if err := r.Client.Create(ctx, pod, client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("failed to create the Pod of machine %s: %w", pm.Name, err)
		}
	case err != nil:
		return err
	case !metav1.IsControlledBy(pod, pm):
		// A Pod of an earlier PodMachine of the same name: it goes first.
		if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete Pod %s, which is not machine %s's: %w", pod.Name, pm.Name, err)
		}
		ready(metav1.ConditionFalse, infrav1.PodPendingReason, "An earlier machine's Pod of the same name is being deleted")
		return nil
	}
	pm.Status.Addresses = nil
	if pod.Status.PodIP != "" {
		pm.Status.Addresses = []infrav1.MachineAddress{{Type: "InternalIP", Address: pod.Status.PodIP}, {Type: "Hostname", Address: pm.Name}}
	}
	status, reason, message := podState(pod)
	if status == metav1.ConditionTrue {
		// Provisioned once, for good (cluster-api's contract): a machine
		// that stops running is Ready=False, and health checks see its Node.
		pm.Status.Initialization = &infrav1.Initialization{Provisioned: ptr.To(true)}
	}
	ready(status, reason, message)
	return nil
}

// podState says whether the machine's Pod runs, and why not.
func podState(pod *corev1.Pod) (metav1.ConditionStatus, string, string) {
	switch pod.Status.Phase {
	case corev1.PodRunning:
		if pod.Status.PodIP == "" {
			return metav1.ConditionFalse, infrav1.PodPendingReason, "The Pod runs but has no address yet"
		}
		for _, c := range pod.Status.ContainerStatuses {
			if c.State.Running == nil {
				return metav1.ConditionFalse, infrav1.PodPendingReason, "The machine restarts: " + waiting(c)
			}
		}
		return metav1.ConditionTrue, infrav1.PodRunningReason, "Pod " + pod.Name + " runs at " + pod.Status.PodIP
	case corev1.PodFailed, corev1.PodSucceeded:
		return metav1.ConditionFalse, infrav1.PodFailedReason, fmt.Sprintf("Pod %s ended (%s): %s", pod.Name, pod.Status.Reason, pod.Status.Message)
	default:
		for _, c := range pod.Status.ContainerStatuses {
			if c.State.Waiting != nil && c.State.Waiting.Reason != "" {
				return metav1.ConditionFalse, infrav1.PodPendingReason, "The machine does not start yet: " + waiting(c)
			}
		}
		if pod.Spec.NodeName == "" {
			return metav1.ConditionFalse, infrav1.PodPendingReason, "The Pod is not scheduled yet"
		}
		return metav1.ConditionFalse, infrav1.PodPendingReason, "The Pod starts on node " + pod.Spec.NodeName
	}
}

// waiting says why a container is not running.
func waiting(c corev1.ContainerStatus) string {
	switch {
	case c.State.Waiting != nil:
		return c.State.Waiting.Reason + ": " + c.State.Waiting.Message
	case c.State.Terminated != nil:
		return fmt.Sprintf("its last run ended with exit code %d (%s)", c.State.Terminated.ExitCode, c.State.Terminated.Reason)
	}
	return "it is not running"
}

// owner is the Machine that owns pm, nil while none does.
func (r *Reconciler) owner(ctx context.Context, pm *infrav1.PodMachine) (*clusterv1.Machine, error) {
	for _, ref := range pm.OwnerReferences {
		if ref.Kind != "Machine" || ref.APIVersion != clusterv1.GroupVersion.String() {
			continue
		}
		m := &clusterv1.Machine{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pm.Namespace, Name: ref.Name}, m); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return m, nil
	}
	return nil, nil
}

// reconcileDelete deletes the machine's Pod and lets the PodMachine go once
// the Pod is gone: cluster-api deletes the PodMachine once the Machine's
// node is drained, and deletes the Node after.
func (r *Reconciler) reconcileDelete(ctx context.Context, pm *infrav1.PodMachine) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(pm, hyperv1.Finalizer) {
		return ctrl.Result{}, nil
	}
	pod := &corev1.Pod{}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(pm), pod); {
	case err == nil:
		if pod.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("failed to delete the Pod of machine %s: %w", pm.Name, err)
			}
		}
		return ctrl.Result{RequeueAfter: deletePoll}, nil
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	patch := client.MergeFromWithOptions(pm.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(pm, hyperv1.Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, pm, patch, client.FieldOwner(FieldOwner)))
}
