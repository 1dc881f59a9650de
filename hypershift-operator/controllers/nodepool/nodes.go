package nodepool

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/scheme"
)

// How often a pool's nodes are counted again in its hosted cluster: often
// while it waits for nodes, seldom once they are all ready.
const (
	NodesPollWaiting = 5 * time.Second
	NodesPollReady   = 30 * time.Second
)

// Reasons of Ready and AllNodesHealthy (hyperv1's, kept here for those
// that name them from this package), and how the hosted cluster is asked.
const (
	WaitingForNodesReason   = hyperv1.WaitingForNodesReason
	NodeNotReadyReason      = hyperv1.NodeNotReadyReason
	HostedAPIUnreachable    = hyperv1.HostedAPIUnreachableReason
	hostedRequestTimeout    = 10 * time.Second
	maxNodesNamedInMessages = 5
)

// hostedClients are clients of the hosted clusters, by HostedCluster,
// made again when its admin kubeconfig changes.
type hostedClients struct {
	keyed[hostedClient]
}

type hostedClient struct {
	uid    types.UID
	hash   [sha256.Size]byte
	client client.Client
}

// get returns the cluster's client, made from kubeconfig unless the one
// made last is of the same kubeconfig and cluster. Two pools of a cluster
// may make one each at once; the later is kept, the other used once.
func (h *hostedClients) get(hc *hyperv1.HostedCluster, kubeconfig []byte) (client.Client, error) {
	hash := sha256.Sum256(kubeconfig)
	key := types.NamespacedName{Namespace: hc.Namespace, Name: hc.Name}
	if c, ok := h.load(key); ok && c.hash == hash && c.uid == hc.UID {
		return c.client, nil
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("the admin kubeconfig of HostedCluster %s/%s does not load: %w", hc.Namespace, hc.Name, err)
	}
	config.Timeout = hostedRequestTimeout
	c, err := client.New(config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	h.store(key, hostedClient{uid: hc.UID, hash: hash, client: c})
	return c, nil
}

// reconcileNodes counts the pool's nodes in its hosted cluster (the Nodes
// the control-plane-operator labeled as the pool's, by the token they
// joined with): status.replicas, AllNodesHealthy, and Ready once as many
// are ready as spec.replicas asks for. Each node gets the pool's labels
// and taints (propagate). It returns when to count again, and what failed
// to propagate.
func (r *Reconciler) reconcileNodes(ctx context.Context, np *hyperv1.NodePool, hc *hyperv1.HostedCluster, kubeconfig []byte, set func(string, metav1.ConditionStatus, string, string)) (time.Duration, error) {
	join := "machines join with the bootstrap kubeconfig in Secret " + np.Namespace + "/" + hyperv1.NodePoolJoinSecretName(np.Name)
	if np.Spec.Platform.Type == hyperv1.PodPlatform {
		join = "the management cluster runs its machines: MachineDeployment " + hyperv1.ControlPlaneNamespace(np.Namespace, np.Spec.ClusterName) + "/" + np.Name
	}
	nodes := &corev1.NodeList{}
	hosted, err := r.hosted.get(hc, kubeconfig)
	if err == nil {
		err = hosted.List(ctx, nodes, client.MatchingLabels{hyperv1.NodePoolLabel: np.Name})
	}
	if err != nil {
		message := fmt.Sprintf("The pool's nodes cannot be listed in the hosted cluster: %v", err)
		set(hyperv1.AllNodesHealthy, metav1.ConditionUnknown, hyperv1.HostedAPIUnreachableReason, message)
		set(hyperv1.Ready, metav1.ConditionFalse, hyperv1.HostedAPIUnreachableReason, message+"; "+join)
		return NodesPollWaiting, nil
	}
	var propagateErrs []error
	for i := range nodes.Items {
		if err := propagate(ctx, hosted, np, &nodes.Items[i]); err != nil {
			propagateErrs = append(propagateErrs, err)
		}
	}
	var ready int32
	var notReady []string
	for i := range nodes.Items {
		if why := nodeNotReady(&nodes.Items[i]); why != "" {
			notReady = append(notReady, why)
			continue
		}
		ready++
	}
	slices.Sort(notReady)
	np.Status.Replicas = int32(len(nodes.Items))
	switch {
	case len(notReady) > 0:
		set(hyperv1.AllNodesHealthy, metav1.ConditionFalse, hyperv1.NodeNotReadyReason, fmt.Sprintf("%d of %d nodes are not ready: %s", len(notReady), len(nodes.Items), names(notReady)))
	case len(nodes.Items) == 0:
		set(hyperv1.AllNodesHealthy, metav1.ConditionTrue, hyperv1.AsExpectedReason, "The pool has no nodes")
	default:
		set(hyperv1.AllNodesHealthy, metav1.ConditionTrue, hyperv1.AsExpectedReason, fmt.Sprintf("All %d nodes are ready", len(nodes.Items)))
	}
	want := int32(0)
	if np.Spec.Replicas != nil {
		want = *np.Spec.Replicas
	}
	if ready < want {
		set(hyperv1.Ready, metav1.ConditionFalse, hyperv1.WaitingForNodesReason, fmt.Sprintf("%d of %d nodes joined and ready; %s", ready, want, join))
		return NodesPollWaiting, errors.Join(propagateErrs...)
	}
	set(hyperv1.Ready, metav1.ConditionTrue, hyperv1.AsExpectedReason, fmt.Sprintf("%d of %d nodes ready; %s", ready, want, join))
	return NodesPollReady, errors.Join(propagateErrs...)
}

// nodeNotReady says why node is not ready; "" when it is.
func nodeNotReady(node *corev1.Node) string {
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return ""
		}
		return fmt.Sprintf("%s (%s: %s)", node.Name, c.Reason, c.Message)
	}
	return node.Name + " (it reports no Ready condition yet)"
}

// names joins the first few of a list, and says how many more there are.
func names(list []string) string {
	if len(list) <= maxNodesNamedInMessages {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:maxNodesNamedInMessages], ", "), len(list)-maxNodesNamedInMessages)
}
