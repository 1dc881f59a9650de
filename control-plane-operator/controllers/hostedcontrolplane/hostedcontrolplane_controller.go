// Package hostedcontrolplane is the control-plane-operator's
// HostedControlPlane controller. Each pass runs phases in order: it reads
// the release payload, applies the components' Services, keeps the PKI's
// Secrets (issuing and re-issuing certificates, with an event for each
// write), applies the components' workloads in dependency order, asks
// the kube-apiserver at its published endpoint whether it is ready, and,
// once it runs a new active encryption key, rewrites the hosted cluster's
// Secrets with it (secretencryption.Rewrite), once per key. Status
// is computed once, when the pass ends, from what the phases found. On
// delete it removes the components, never their data, before it lets the
// HostedControlPlane go.
//
// It runs only on the replica that holds the Lease, and writes nothing
// when the HostedControlPlane asks for a release other than the one this
// operator was rolled out for.
package hostedcontrolplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/components"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

const (
	// FieldOwner is the server-side apply field manager of the CPO.
	FieldOwner = "control-plane-operator"
	// Finalizer holds a HostedControlPlane until its components are gone.
	Finalizer = "hypershift.openshift.io/control-plane-operator"
	// PKIComponent is the component label value of the PKI's Secrets.
	PKIComponent = "pki"

	// notReadyPoll is how often a control plane that is not ready is
	// looked at again, beside the watches.
	notReadyPoll = 10 * time.Second
	// readyPoll is how often a ready control plane's kube-apiserver is
	// asked again whether it is ready.
	readyPoll = time.Minute
	// addressPoll is how soon a pass that waits for a Service's address
	// runs again.
	addressPoll = time.Second
	// hostedRequestTimeout bounds each request to the hosted
	// kube-apiserver.
	hostedRequestTimeout = 30 * time.Second
)

// Reconciler reconciles one HostedControlPlane: the one it was rendered for.
// Another HostedControlPlane in its namespace is never read or written.
type Reconciler struct {
	// Name is the name of the HostedControlPlane to reconcile.
	Name string
	// Client reads from the namespace-scoped cache and writes.
	Client client.Client
	// APIReader reads past the cache: the pull secret, and a Secret the
	// cache does not show before anything is issued in its place.
	APIReader client.Reader
	// Releases resolves the release payload.
	Releases releaseinfo.Provider
	// OperateOnReleaseImage is the release this CPO was rolled out for
	// ($OPERATE_ON_RELEASE_IMAGE); empty turns the guard off.
	OperateOnReleaseImage string
	// Identity is this process's Lease identity (its pod's name), for
	// logs.
	Identity string
	// Recorder emits events on the HostedControlPlane.
	Recorder events.EventRecorder
	// Fenced counts the writes the API server refused as fenced; Client
	// must be made with its Client to count them. Nil counts nothing.
	Fenced *FencedWrites
	// Clock is the time source; tests may replace it.
	Clock clock.PassiveClock
	// Components are the control plane's components; nil means
	// components.All().
	Components []component.Component
	// Ready asks the kube-apiserver at url whether it is ready, trusting
	// caPEM; nil means kubeapiserver.Ready.
	Ready func(ctx context.Context, url string, caPEM []byte) error

	// HostedClient makes a client of the hosted cluster from a kubeconfig,
	// to rewrite its Secrets with a new encryption key; nil makes a real
	// one.
	HostedClient func(kubeconfig []byte) (client.Client, error)
	// refusals spaces the passes while the API server refuses objects.
	refusals refusalRetries
}

// scope is what one pass over one HostedControlPlane found and decided.
// Phases fill it; the status is computed from it when the pass ends.
type scope struct {
	hcp      *hyperv1.HostedControlPlane
	original *hyperv1.HostedControlPlane
	// components are the control plane's components in dependency order.
	components []component.Component
	// release is the payload, once read.
	release *releaseinfo.ReleaseImage
	// releaseErr is why the payload cannot be used.
	releaseErr error
	// clusterIPs are the live Services' ClusterIPs, by name.
	clusterIPs map[string]string
	// endpoint is where clients reach the kube-apiserver, once known;
	// endpointWhy says why it is not known.
	endpoint    *hyperv1.APIEndpoint
	endpointWhy string
	// servicesDone is true once the Services were applied and read back.
	servicesDone bool
	// secrets are the PKI's Secrets by name, once kept or issued.
	secrets map[string]*corev1.Secret
	// renewAt is when a certificate falls due.
	renewAt time.Time
	// pkiErr is why the PKI cannot be kept.
	pkiErr error
	// encryptionActiveKey names the key Secrets are written with, once
	// the PKI phase kept the encryption configuration; rewrittenWith is
	// the active key every Secret was rewritten with, once known;
	// encryptionErr is why they could not be.
	encryptionActiveKey, rewrittenWith string
	encryptionErr                      error
	// configErr is why a component cannot render.
	configErr error
	// rendered is true once every component rendered.
	rendered bool
	// availability is each component's, by name, once judged.
	availability map[string]component.Availability
	// rolledOut holds the components that run what this pass rendered
	// and are available.
	rolledOut map[string]bool
	// written holds the components whose workload this pass applied (sent
	// or found unchanged).
	written map[string]bool
	// refusal is the first object the API server refused in this pass, in
	// one sentence (see refused).
	refusal string
	// readyzErr is the kube-apiserver's answer, once asked.
	readyzErr   error
	readyzAsked bool
}

// Reconcile brings the control plane in line with the HostedControlPlane.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	log := ctrl.LoggerFrom(ctx)
	if req.Name != r.Name {
		return ctrl.Result{}, nil
	}
	hcp := &hyperv1.HostedControlPlane{}
	if err := r.Client.Get(ctx, req.NamespacedName, hcp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	// The version guard comes before any write: an outdated CPO must never
	// undo its successor's work.
	if r.OperateOnReleaseImage != "" && r.OperateOnReleaseImage != hcp.Spec.ReleaseImage {
		releaseMismatch.Set(1)
		log.Info("Not reconciling: this control-plane-operator was rolled out for another release",
			"operateOnReleaseImage", r.OperateOnReleaseImage, "releaseImage", hcp.Spec.ReleaseImage)
		return ctrl.Result{}, nil
	}
	releaseMismatch.Set(0)

	if !hcp.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, hcp)
	}
	if paused, until, err := hyperv1.ParsePausedUntil(hcp.Spec.PausedUntil, r.now()); err == nil && paused {
		log.Info("Reconciliation is paused", "pausedUntil", *hcp.Spec.PausedUntil)
		if until.IsZero() {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: until.Sub(r.now())}, nil
	}
	if !controllerutil.ContainsFinalizer(hcp, Finalizer) {
		patch := client.MergeFromWithOptions(hcp.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(hcp, Finalizer)
		if err := r.Client.Patch(ctx, hcp, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to add finalizer: %w", err)
		}
	}

	s := &scope{hcp: hcp, original: hcp.DeepCopy(), components: r.components()}
	defer func() {
		r.computeStatus(s)
		r.reportRefusal(ctx, s)
		if err := r.patchStatus(ctx, s); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()
	result, err := r.reconcileNormal(ctx, s)
	if err != nil && isFenced(err) {
		r.reportFenced(ctx, hcp.Namespace, err)
	}
	if s.refusal == "" {
		r.refusals.forget()
	} else if err == nil {
		// Not an error: status says it, and only a change can help.
		result = ctrl.Result{RequeueAfter: r.refusals.next(r.now())}
	}
	return result, err
}

// reconcileNormal runs the phases in order; each may stop the pass, and a
// phase whose objects were refused stops it once the phase has applied what
// it could.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	phases := []func(context.Context, *scope) (ctrl.Result, error){
		r.reconcileRelease,
		r.reconcileServices,
		r.reconcilePKI,
		r.reconcileComponents,
		r.reconcileReadiness,
		r.reconcileSecretEncryption,
	}
	for _, phase := range phases {
		result, err := phase(ctx, s)
		if err != nil || !result.IsZero() || s.refusal != "" {
			return result, err
		}
	}
	return ctrl.Result{RequeueAfter: r.nextLook(s)}, nil
}

// nextLook is when a pass that completed looks again: soon while the
// control plane is not ready, every readyPoll once it is, and no later than
// the next certificate renewal.
func (r *Reconciler) nextLook(s *scope) time.Duration {
	after := readyPoll
	if !s.allRolledOut() || s.readyzErr != nil {
		after = notReadyPoll
	}
	if !s.renewAt.IsZero() {
		if untilRenewal := s.renewAt.Sub(r.now()); untilRenewal < after {
			after = max(untilRenewal, time.Second)
		}
	}
	return after
}

// patchStatus writes the status when, and only when, it changed.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if equality.Semantic.DeepEqual(s.original.Status, s.hcp.Status) {
		return nil
	}
	if err := r.Client.Status().Update(ctx, s.hcp); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to update status: %w", err)
	}
	return nil
}

func (r *Reconciler) applier() apply.Applier {
	return apply.Applier{Client: r.Client, FieldOwner: FieldOwner}
}

func (r *Reconciler) components() []component.Component {
	if r.Components == nil {
		return components.All()
	}
	return r.Components
}

func (r *Reconciler) ready() func(context.Context, string, []byte) error {
	if r.Ready == nil {
		return kubeapiserver.Ready
	}
	return r.Ready
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}
