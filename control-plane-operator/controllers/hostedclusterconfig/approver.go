package hostedclusterconfig

import (
	"bytes"
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/csrapproval"
)

// Reasons of the approver's decisions on a CSR.
const (
	ServingApprovedReason = "HyperShiftServingApproved"
	ServingDeniedReason   = "HyperShiftServingDenied"
)

// approverResync is how often every pending request is looked at again,
// should a change have been missed: a request waits for its Node's
// registration and adoption, which the Node's watch reports at once.
const approverResync = 10 * time.Second

// ServingApprover approves the kubelets' serving certificate requests in
// the hosted cluster, which kube-controller-manager never approves: only
// one who knows a node's addresses can vouch for them. It first tells which
// NodePool a Node is a machine of (adopt); a request of a pool's Node
// passes package csrapproval's rule (from the node it names, for the names
// and addresses its Node reports) or is denied with the rule's reason; one
// of a Node of no pool waits. It is a runnable of the term: a standby
// approves and labels nothing.
type ServingApprover struct {
	// Namespace is the control-plane namespace; Client reads the
	// kubeconfig Secret in it.
	Namespace string
	Client    client.Reader
	// Resync is how often every request is looked at again, whatever
	// changed; approverResync when zero.
	Resync time.Duration
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
	resync := a.Resync
	if resync == 0 {
		resync = approverResync
	}
	factory := informers.NewSharedInformerFactory(clientset, resync)
	informer := factory.Certificates().V1().CertificateSigningRequests().Informer()
	nodes := factory.Core().V1().Nodes().Lister()
	decide := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			a.adopt(ctx, clientset, nodes, csr)
			a.decide(ctx, clientset, nodes, csr)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    decide,
		UpdateFunc: func(_, obj any) { decide(obj) },
	}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to watch the hosted cluster's certificate signing requests")
		return
	}
	// A Node's registration (or its pool label, or its addresses) is what
	// a request of its waits for: the requests that name it are decided at
	// once, not at the next resync, so that its kubelet serves (logs,
	// exec) within moments of joining.
	nodeChanged := func(obj any) {
		node, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		// Cheap checks first: a Node's status changes often, and only a
		// Node not adopted yet needs its client request parsed.
		adopted := node.Labels[hyperv1.NodePoolLabel] != ""
		for _, item := range informer.GetStore().List() {
			csr, ok := item.(*certificatesv1.CertificateSigningRequest)
			switch {
			case !ok:
			case csrapproval.NodeName(csr) == node.Name:
				if !csrapproval.Decided(csr) {
					decide(csr)
				}
			case !adopted && csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName:
				if _, name, ok := csrapproval.BootstrapClient(csr); ok && name == node.Name {
					decide(csr)
				}
			}
		}
	}
	if _, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    nodeChanged,
		UpdateFunc: func(_, obj any) { nodeChanged(obj) },
	}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to watch the hosted cluster's nodes")
		return
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

// adopt labels the Node a NodePool's machine registered as with the
// pool's name (hyperv1.NodePoolLabel), from the request that gave the
// machine its first client certificate: the bootstrap token it was made
// with is the pool's (installed in kube-system with the pool's label). A
// label only the control-plane-operator sets is what makes a Node a
// pool's: a machine cannot claim another pool, and a Node no pool's
// token made gets no serving certificate.
func (a *ServingApprover) adopt(ctx context.Context, clientset kubernetes.Interface, nodes corelisters.NodeLister, csr *certificatesv1.CertificateSigningRequest) {
	id, name, ok := csrapproval.BootstrapClient(csr)
	if !ok {
		return
	}
	node, err := nodes.Get(name)
	if err != nil || node.Labels[hyperv1.NodePoolLabel] != "" {
		return // not registered yet (looked at again), or adopted
	}
	log := ctrl.LoggerFrom(ctx).WithValues("node", name, "csr", csr.Name)
	token, err := clientset.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return // expired and cleaned up: not a token this pass can tell the pool of
	} else if err != nil {
		log.Error(err, "Failed to read the bootstrap token a node joined with")
		return
	}
	pool := token.Labels[hyperv1.NodePoolLabel]
	if pool == "" || token.Labels[managedByLabel] != FieldOwner {
		return // a token of no NodePool
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, hyperv1.NodePoolLabel, pool)
	if _, err := clientset.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldOwner}); err != nil {
		log.Error(err, "Failed to label a NodePool's node")
		return
	}
	log.Info("A NodePool's machine joined", "nodePool", pool)
}

// decide approves or denies csr when it is a pending kubelet serving
// request whose Node is registered and is a NodePool's (adopt).
func (a *ServingApprover) decide(ctx context.Context, clientset kubernetes.Interface, nodes corelisters.NodeLister, csr *certificatesv1.CertificateSigningRequest) {
	name := csrapproval.NodeName(csr)
	if name == "" || csrapproval.Decided(csr) {
		return
	}
	log := ctrl.LoggerFrom(ctx).WithValues("csr", csr.Name, "node", name)
	node, err := nodes.Get(name)
	if err != nil || node.Labels[hyperv1.NodePoolLabel] == "" {
		return // looked at again once the Node registers and is adopted
	}
	if len(node.Status.Addresses) == 0 {
		return // looked at again once the Node reports where it is: judged against none, it would be denied
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
