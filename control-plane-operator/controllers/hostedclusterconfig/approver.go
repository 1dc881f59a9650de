package hostedclusterconfig

import (
	"bytes"
	"context"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/csrapproval"
)

// Reasons of the approver's decisions on a CSR.
const (
	ServingApprovedReason = "HyperShiftServingApproved"
	ServingDeniedReason   = "HyperShiftServingDenied"
)

// approverResync is how often every pending request is looked at again: a
// request for a Node that has not registered yet waits for it.
const approverResync = 10 * time.Second

// ServingApprover approves the kubelets' serving certificate requests in
// the hosted cluster, which kube-controller-manager never approves: only
// one who knows a node's addresses can vouch for them. A request passes
// package csrapproval's rule (from the node it names, for the names and
// addresses its Node reports) or is denied with the rule's reason. It is
// a runnable of the term: a standby approves nothing.
type ServingApprover struct {
	// Namespace is the control-plane namespace; Client reads the
	// kubeconfig Secret in it.
	Namespace string
	Client    client.Reader
}

// Start watches the hosted cluster's requests until ctx ends, and again
// with a new kubeconfig whenever its Secret changes.
func (a *ServingApprover) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("serving-approver")
	var running []byte
	var stop context.CancelFunc = func() {}
	defer func() { stop() }()
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		secret := &corev1.Secret{}
		if err := a.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: pki.HostedClusterConfigKubeconfigSecret}, secret); err != nil {
			if !apierrors.IsNotFound(err) {
				log.Error(err, "Failed to read the hosted cluster's kubeconfig")
			}
			return
		}
		kubeconfig := secret.Data[pki.KubeconfigKey]
		if running != nil && bytes.Equal(kubeconfig, running) {
			return
		}
		config, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		if err != nil {
			log.Error(err, "Secret holds no usable kubeconfig", "secret", pki.HostedClusterConfigKubeconfigSecret)
			return
		}
		config.Timeout = requestTimeout
		clientset, err := kubernetes.NewForConfig(config)
		if err != nil {
			log.Error(err, "Failed to make a client of the hosted cluster")
			return
		}
		stop()
		var watchCtx context.Context
		watchCtx, stop = context.WithCancel(ctx)
		running = kubeconfig
		go a.watch(ctrl.LoggerInto(watchCtx, log), clientset)
	}, 2*time.Second)
	return nil
}

// watch decides every pending serving request of the hosted cluster, as
// it comes and every approverResync, until ctx ends.
func (a *ServingApprover) watch(ctx context.Context, clientset kubernetes.Interface) {
	factory := informers.NewSharedInformerFactory(clientset, approverResync)
	informer := factory.Certificates().V1().CertificateSigningRequests().Informer()
	decide := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			a.decide(ctx, clientset, csr)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    decide,
		UpdateFunc: func(_, obj any) { decide(obj) },
	}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to watch the hosted cluster's certificate signing requests")
		return
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

// decide approves or denies csr when it is a pending kubelet serving
// request whose Node is registered.
func (a *ServingApprover) decide(ctx context.Context, clientset kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest) {
	name := csrapproval.NodeName(csr)
	if name == "" || csrapproval.Decided(csr) {
		return
	}
	log := ctrl.LoggerFrom(ctx).WithValues("csr", csr.Name, "node", name)
	node, err := clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return // looked at again once the Node registers
	} else if err != nil {
		log.Error(err, "Failed to read the Node of a serving certificate request")
		return
	}
	condition := certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: ServingApprovedReason, Message: "the request is from node " + name + " for its own names and addresses",
	}
	if err := csrapproval.KubeletServing(csr, node); err != nil {
		condition.Type, condition.Reason, condition.Message = certificatesv1.CertificateDenied, ServingDeniedReason, err.Error()
	}
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, condition)
	if _, err := clientset.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		if !apierrors.IsConflict(err) {
			log.Error(err, "Failed to decide a serving certificate request")
		}
		return
	}
	log.Info("Decided a kubelet serving certificate request", "decision", condition.Type, "reason", condition.Message)
}
