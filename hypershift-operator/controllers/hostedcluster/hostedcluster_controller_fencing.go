package hostedcluster

import (
	"context"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/fencing"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
)

// LeaderFencing is hyperv1.LeaderFencing, kept here for those that name it
// from this package.
const LeaderFencing = hyperv1.LeaderFencing

// Fencing says whether the HO binds the fencing policy to control-plane
// namespaces (see render.FencingPolicy).
type Fencing struct {
	// Enabled is the operator's --enable-fencing.
	Enabled bool
	// Unavailable, when not empty, says why the API server cannot fence
	// (no ValidatingAdmissionPolicy API, no pod name in tokens).
	Unavailable string
}

// Active reports whether the HO binds the fencing policy.
func (f Fencing) Active() bool { return f.Enabled && f.Unavailable == "" }

// reconcileFencing sees to the fence of this namespace, whose
// LeaderFencingLabel (set by render.Namespace when in.Fenced) the shared
// fencing bindings select, or, when fencing is off, takes the namespace out
// of their selection, and records which (s.fence).
func (r *Reconciler) reconcileFencing(ctx context.Context, s *scope, in render.Inputs) error {
	switch {
	case !r.Fencing.Enabled:
		s.fence = &finding{metav1.ConditionFalse, hyperv1.FencingDisabledReason, "Fencing is disabled (--enable-fencing=false): the API server does not check that control-plane-operator writes come from the Lease holder"}
		if err := r.deleteCachedNamespaceFencingBindings(ctx, in.Namespace(), render.ClusterKey(in.HostedCluster)); err != nil {
			return err
		}
		return r.unlabel(ctx, in.Namespace())
	case r.Fencing.Unavailable != "":
		s.fence = &finding{metav1.ConditionFalse, hyperv1.FencingUnsupportedReason, r.Fencing.Unavailable}
		return r.unlabel(ctx, in.Namespace())
	}
	// The binding's param exists before any CPO pod can run, so a CPO is
	// never unfenced; the CPO takes this empty Lease as it would a
	// released one.
	if err := r.ensureLease(ctx, in.Namespace()); err != nil {
		return err
	}
	if err := r.reconcileClusterAPIFencing(ctx, in); err != nil {
		return err
	}
	if missing, err := r.missingFencingObjects(ctx); err != nil || missing != "" {
		if missing != "" {
			s.fence = &finding{metav1.ConditionFalse, hyperv1.FencingPolicyMissingReason,
				"The API server does not fence control-plane-operator writes: " + missing + " does not exist (the hypershift-operator re-creates it)"}
		}
		return err
	}
	// Whether the API server fences is observed once status is known.
	s.fenced = true
	return nil
}

// missingFencingObjects names the first cluster-scoped fencing object
// (applied by the fencing controller) that the cache does not hold.
func (r *Reconciler) missingFencingObjects(ctx context.Context) (string, error) {
	for _, obj := range fencing.Required() {
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("%s %s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName()), nil
			}
			return "", fmt.Errorf("failed to get %s: %w", obj.GetName(), err)
		}
	}
	return "", nil
}

// reconcileClusterAPIFencing fences a platform Pod cluster's cluster-api
// manager (render.ClusterAPIFencingPolicy) before its Deployment is
// applied: its Lease, with no holder, is the shared binding's param there.
func (r *Reconciler) reconcileClusterAPIFencing(ctx context.Context, in render.Inputs) error {
	if in.HostedCluster.Spec.Platform.Type != hyperv1.PodPlatform {
		return nil
	}
	// The cache holds Deployments, not this Lease: while the manager's
	// Deployment exists, so does its Lease (the manager keeps it, the
	// Lease guard refuses its deletion), and a converged cluster costs no
	// request.
	key := client.ObjectKey{Namespace: in.Namespace(), Name: hyperv1.ClusterAPIName}
	if err := r.Client.Get(ctx, key, &appsv1.Deployment{}); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to get Deployment %s: %w", key, err)
		}
		return r.createLease(ctx, in.Namespace(), hyperv1.ClusterAPILeaseName)
	}
	return nil
}

// namespaceFencingBindings are the bindings of namespace alone (the
// control-plane-operator's and the cluster-api manager's) that versions
// before the shared bindings applied.
func namespaceFencingBindings(namespace string) map[string]string {
	return map[string]string{
		render.NamespaceFencingBindingName(namespace):           "fencing binding",
		render.NamespaceClusterAPIFencingBindingName(namespace): "cluster-api fencing binding",
	}
}

// deleteNamespaceFencingBindings removes the fencing bindings of namespace
// alone that exist and serve the HostedCluster clusterKey.
func (r *Reconciler) deleteNamespaceFencingBindings(ctx context.Context, namespace, clusterKey string) error {
	for name, what := range namespaceFencingBindings(namespace) {
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := r.deleteClusterScoped(ctx, binding, what, clusterKey); err != nil {
			return err
		}
	}
	return nil
}

// cachedNamespaceFencingBindings are the bindings of namespace alone that
// the cache shows.
func (r *Reconciler) cachedNamespaceFencingBindings(ctx context.Context, namespace string) ([]*admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	var found []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for name, what := range namespaceFencingBindings(namespace) {
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, binding); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("failed to get %s %s: %w", what, name, err)
		}
		found = append(found, binding)
	}
	return found, nil
}

// deleteBindings deletes bindings, each as the cache showed it.
func (r *Reconciler) deleteBindings(ctx context.Context, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) error {
	for _, binding := range bindings {
		if err := r.Client.Delete(ctx, binding, client.Preconditions{UID: &binding.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("failed to delete fencing binding %s: %w", binding.Name, err)
		}
	}
	return nil
}

// deleteCachedNamespaceFencingBindings deletes the bindings of namespace
// alone, left by an earlier version for the HostedCluster clusterKey, that
// the cache shows (fencing is off): a converged cluster costs no request.
func (r *Reconciler) deleteCachedNamespaceFencingBindings(ctx context.Context, namespace, clusterKey string) error {
	legacy, err := r.cachedNamespaceFencingBindings(ctx, namespace)
	if err != nil {
		return err
	}
	return r.deleteBindings(ctx, slices.DeleteFunc(legacy, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
		return b.Annotations[hyperv1.ClusterAnnotation] != clusterKey
	}))
}

// unlabel takes the namespace out of the fencing bindings' selection
// (the HO does not fence): its LeaderFencingLabel is removed. The
// namespace's apply drops the label only where the HO applied it; the HO
// also sets it when it creates the namespace, so it is removed here, read
// from the cache: a converged cluster costs no request.
func (r *Reconciler) unlabel(ctx context.Context, namespace string) error {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return client.IgnoreNotFound(err)
	}
	if _, ok := ns.Labels[render.LeaderFencingLabel]; !ok {
		return nil
	}
	patch := []byte(`{"metadata":{"labels":{"` + render.LeaderFencingLabel + `":null}}}`)
	if err := r.Client.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to remove label %s from namespace %s: %w", render.LeaderFencingLabel, namespace, err)
	}
	return nil
}

// deleteClusterScoped deletes obj (a cluster-scoped object, named), which
// the namespace's deletion would leave behind, if it exists and serves the
// HostedCluster clusterKey. It reads past the cache: an object a late
// cache does not show yet must not outlive its cluster.
func (r *Reconciler) deleteClusterScoped(ctx context.Context, obj client.Object, what, clusterKey string) error {
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("failed to get %s %s: %w", what, obj.GetName(), err)
	}
	if obj.GetAnnotations()[hyperv1.ClusterAnnotation] != clusterKey {
		return nil
	}
	if err := r.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete %s %s: %w", what, obj.GetName(), err)
	}
	return nil
}

// ensureLease creates the CPO Lease, with no holder, when the cache does
// not hold it.
func (r *Reconciler) ensureLease(ctx context.Context, namespace string) error {
	key := client.ObjectKey{Namespace: namespace, Name: hyperv1.ControlPlaneOperatorLeaseName}
	if err := r.Client.Get(ctx, key, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		return err
	}
	return r.createLease(ctx, namespace, key.Name)
}

// createLease creates the Lease name, with no holder, unless it exists.
func (r *Reconciler) createLease(ctx context.Context, namespace, name string) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := r.Client.Create(ctx, lease, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create Lease %s/%s: %w", namespace, name, err)
	}
	return nil
}
