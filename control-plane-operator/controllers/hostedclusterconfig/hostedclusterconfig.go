// Package hostedclusterconfig configures the hosted cluster itself, from
// the control plane's side: what its nodes need to join it and to be
// useful (manifests.go). It runs in the control-plane-operator only while
// it holds the Lease, so a standby writes nothing in the hosted cluster
// either, as HyperShift's hosted-cluster-config-operator does.
//
// It reaches the hosted kube-apiserver with the kubeconfig the PKI issues
// for it (pki.HostedClusterConfigKubeconfigSecret, over the internal URL),
// applies every object with server-side apply, sends nothing when the
// hosted cluster already holds it, and checks again every ResyncPeriod,
// repairing what a user changed.
package hostedclusterconfig

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/support/hostedclient"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// FieldOwner is the field manager of its applies in the hosted cluster.
const FieldOwner = "control-plane-operator"

// ResyncPeriod is how often the hosted cluster is checked again when
// nothing on the management side changed: it repairs drift there, which
// no watch reports.
const ResyncPeriod = 5 * time.Minute

// requestTimeout bounds each request to the hosted kube-apiserver, so that
// a hosted API server that hangs does not hold the worker.
const requestTimeout = 15 * time.Second

// Reconciler configures the hosted cluster of one HostedControlPlane.
type Reconciler struct {
	// Name is the HostedControlPlane's name; Client sees its namespace.
	Name string
	// Client reads the HostedControlPlane and the kubeconfig Secret.
	Client client.Client
	// APIReader reads the pull secret, which the cache does not hold.
	APIReader client.Reader
	// Releases reads the release payload the node-side images come from.
	Releases releaseinfo.Provider

	mu     sync.Mutex
	hash   [sha256.Size]byte
	hosted client.Client
}

// SetupWithManager runs the controller on the HostedControlPlane, its
// kubeconfig Secret and the NodePools' token Secrets.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	own := predicate.NewPredicateFuncs(func(obj client.Object) bool { return obj.GetName() == r.Name })
	isInput := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		_, isToken := obj.GetLabels()[hyperv1.NodePoolLabel]
		return obj.GetName() == pki.HostedClusterConfigKubeconfigSecret || isToken
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("hostedclusterconfig").
		For(&hyperv1.HostedControlPlane{}, builder.WithPredicates(own)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: r.Name}}}
		}), builder.WithPredicates(isInput)).
		Complete(r)
}

// Reconcile applies Objects, DataPlane and the NodePools' bootstrap tokens
// in the hosted cluster once its kubeconfig exists.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	hcp := &hyperv1.HostedControlPlane{}
	if err := r.Client.Get(ctx, req.NamespacedName, hcp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !hcp.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: pki.HostedClusterConfigKubeconfigSecret}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // the Secret's creation starts the next pass
		}
		return ctrl.Result{}, err
	}
	hosted, err := r.hostedClient(secret.Data[pki.KubeconfigKey])
	if err != nil {
		return ctrl.Result{}, err
	}
	applier := apply.Applier{Client: hosted, FieldOwner: FieldOwner}
	var errs []error
	objects := Objects()
	if hcp.Spec.Platform.Type == hyperv1.PodPlatform {
		objects = append(objects, ClusterAPIObjects()...)
	}
	for _, obj := range objects {
		if _, err := applier.Apply(ctx, obj); err != nil {
			errs = append(errs, fmt.Errorf("failed to apply %T %s in the hosted cluster: %w", obj, obj.GetName(), err))
		}
	}
	dataPlane, err := r.dataPlane(ctx, hcp)
	if err != nil {
		errs = append(errs, err)
	}
	for _, obj := range dataPlane {
		if _, err := applier.Apply(ctx, obj); err != nil {
			errs = append(errs, fmt.Errorf("failed to apply %T %s/%s in the hosted cluster: %w", obj, obj.GetNamespace(), obj.GetName(), err))
		}
	}
	if err := r.reconcileTokens(ctx, req.Namespace, hosted); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: ResyncPeriod}, nil
}

// dataPlane renders DataPlane with the images of the control plane's
// release payload; nothing while the kube-apiserver's endpoint is not
// published (its publication starts the next pass).
func (r *Reconciler) dataPlane(ctx context.Context, hcp *hyperv1.HostedControlPlane) ([]client.Object, error) {
	if e := hcp.Status.ControlPlaneEndpoint; e == nil || e.Host == "" || e.Port == 0 {
		return nil, nil
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: hcp.Namespace, Name: hcp.Spec.PullSecret.Name}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("failed to get pull secret %s: %w", key, err)
	}
	release, err := r.Releases.Lookup(ctx, hcp.Spec.ReleaseImage, secret.Data[corev1.DockerConfigJsonKey])
	if err != nil {
		return nil, fmt.Errorf("failed to read release image %s: %w", hcp.Spec.ReleaseImage, err)
	}
	in := DataPlaneInputs{HostedControlPlane: hcp}
	for tag, image := range map[string]*string{KubeProxyImageTag: &in.KubeProxyImage, CoreDNSImageTag: &in.CoreDNSImage} {
		var ok bool
		if *image, ok = release.ComponentImage(tag); !ok {
			return nil, fmt.Errorf("release image %s names no %s image: the hosted cluster's nodes get no %s", hcp.Spec.ReleaseImage, tag, tag)
		}
	}
	in.PodNetworkImage, _ = release.ComponentImage(PodNetworkImageTag)
	return DataPlane(in)
}

// hostedClient returns a client of the hosted cluster for kubeconfig,
// made again only when the kubeconfig changes (a re-issued certificate).
func (r *Reconciler) hostedClient(kubeconfig []byte) (client.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hash := sha256.Sum256(kubeconfig)
	if r.hosted != nil && hash == r.hash {
		return r.hosted, nil
	}
	c, err := hostedclient.New(kubeconfig, requestTimeout, pki.HostedClusterConfigKubeconfigSecret)
	if err != nil {
		return nil, err
	}
	r.hash, r.hosted = hash, c
	return c, nil
}
