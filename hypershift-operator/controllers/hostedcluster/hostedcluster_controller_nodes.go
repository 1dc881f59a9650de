package hostedcluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// A control plane whose kube-apiservers, or a quorum of whose etcd
// members, run only on lost nodes (their kubelets silent for the
// heartbeat tracker's bound) cannot serve, whatever its last reported
// status says: the HostedCluster says so, naming the nodes, as soon as the
// tracker counts them lost. Nothing is read while no node is lost. A lost
// node's kube-apiserver and etcd pods are listed once (by spec.nodeName),
// and only the HostedClusters they belong to are woken and, on each pass
// while the node stays lost, list their own; its return wakes them again.

// The ControlPlaneComponentLabel values of the pods that serve the hosted
// API.
const (
	kubeAPIServerComponent = "kube-apiserver"
	etcdComponent          = "etcd"
)

// servingPods selects the kube-apiserver and etcd pods.
var servingPods = func() labels.Selector {
	req, err := labels.NewRequirement(hyperv1.ControlPlaneComponentLabel, selection.In, []string{kubeAPIServerComponent, etcdComponent})
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}()

// lostNodeClusters remembers, by lost node, the HostedClusters whose
// kube-apiserver or etcd pods ran on it when it was lost: only their
// passes read pods, and its return wakes them, even when their pods have
// left it meanwhile.
type lostNodeClusters struct {
	mu     sync.Mutex
	byNode map[string]map[types.NamespacedName]struct{}
}

func (l *lostNodeClusters) add(node string, clusters []types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byNode == nil {
		l.byNode = map[string]map[types.NamespacedName]struct{}{}
	}
	if l.byNode[node] == nil {
		l.byNode[node] = map[types.NamespacedName]struct{}{}
	}
	for _, cluster := range clusters {
		l.byNode[node][cluster] = struct{}{}
	}
}

// affects reports whether cluster had pods on one of the nodes lost.
func (l *lostNodeClusters) affects(cluster types.NamespacedName, lost map[string]time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for node := range lost {
		if _, ok := l.byNode[node][cluster]; ok {
			return true
		}
	}
	return false
}

// take returns and forgets the HostedClusters recorded for node.
func (l *lostNodeClusters) take(node string) []types.NamespacedName {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []types.NamespacedName
	for cluster := range l.byNode[node] {
		out = append(out, cluster)
	}
	delete(l.byNode, node)
	return out
}

// observeLostNodes sets observed.lostNodes when nodes are lost and the
// control plane cannot serve because of them.
func (r *Reconciler) observeLostNodes(ctx context.Context, s *scope) error {
	if r.Heartbeats == nil {
		return nil
	}
	lost := r.Heartbeats.Lost()
	if len(lost) == 0 || !r.lostNodes.affects(client.ObjectKeyFromObject(s.hc), lost) {
		return nil
	}
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(s.namespace), client.MatchingLabelsSelector{Selector: servingPods}); err != nil {
		return fmt.Errorf("failed to list the kube-apiserver and etcd pods while nodes are lost: %w", err)
	}
	s.observed.lostNodes = cannotServe(pods.Items, lost, r.Heartbeats.After())
	return nil
}

// cannotServe says why a control plane with pods cannot serve while the
// nodes lost are silent (for at least after), naming those nodes; empty
// when it can.
func cannotServe(pods []corev1.Pod, lost map[string]time.Duration, after time.Duration) string {
	onLost := func(p corev1.Pod) bool { _, ok := lost[p.Spec.NodeName]; return ok && p.Spec.NodeName != "" }
	var why []string
	nodes := map[string]struct{}{}
	// kube-apiserver: down when some run on lost nodes and none runs
	// anywhere else.
	var apiLost []string
	serving := 0
	for _, p := range pods {
		if p.Labels[hyperv1.ControlPlaneComponentLabel] != kubeAPIServerComponent {
			continue
		}
		switch {
		case onLost(p):
			apiLost = append(apiLost, p.Spec.NodeName)
		case p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning:
			serving++
		}
	}
	if len(apiLost) > 0 && serving == 0 {
		why = append(why, "its kube-apiserver runs only on "+nodeList(apiLost))
		for _, n := range apiLost {
			nodes[n] = struct{}{}
		}
	}
	// etcd: down when a quorum of its members is on lost nodes.
	var etcdLost []string
	members := 0
	for _, p := range pods {
		if p.Labels[hyperv1.ControlPlaneComponentLabel] != etcdComponent {
			continue
		}
		members++
		if onLost(p) {
			etcdLost = append(etcdLost, p.Spec.NodeName)
		}
	}
	if len(etcdLost) > 0 && len(etcdLost) >= members/2+1 {
		why = append(why, fmt.Sprintf("%d of its %d etcd members are on %s, so etcd has lost its quorum", len(etcdLost), members, nodeList(etcdLost)))
		for _, n := range etcdLost {
			nodes[n] = struct{}{}
		}
	}
	if len(why) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(nodes))
	// The message stays the same while the nodes stay silent: it names the
	// bound, not the growing silence, so status is written once.
	kubelets, returns := "the kubelet of node "+names[0]+" has", "the node returns"
	if len(names) > 1 {
		kubelets, returns = "the kubelets of nodes "+strings.Join(names, ", ")+" have", "the nodes return"
	}
	return fmt.Sprintf("The hosted control plane cannot serve: %s; %s not heartbeated for over %s. It serves again, with its data, when %s",
		strings.Join(why, ", and "), kubelets, after, returns)
}

// nodeList names the distinct nodes of names, sorted: "node a" or "nodes
// a, b".
func nodeList(names []string) string {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	if len(names) == 1 {
		return "node " + names[0]
	}
	return "nodes " + strings.Join(names, ", ")
}

// wakeClustersOnNode sends on wake, until ctx (the term's) ends, the
// HostedClusters a node lost or found concerns: when it is lost, those
// whose kube-apiserver or etcd pods are on it, recorded for their passes;
// when it is found, those recorded.
func (r *Reconciler) wakeClustersOnNode(ctx context.Context, node string, lost bool, wake chan<- event.GenericEvent) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	clusters := r.lostNodes.take(node)
	if lost {
		var err error
		if clusters, err = r.clustersOnNode(ctx, node); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to find the control planes on a lost node", "node", node)
		}
		r.lostNodes.add(node, clusters)
	}
	for _, c := range clusters {
		hc := &hyperv1.HostedCluster{}
		hc.Namespace, hc.Name = c.Namespace, c.Name
		select {
		case wake <- event.GenericEvent{Object: hc}:
		case <-ctx.Done():
			return
		}
	}
}

// clustersOnNode returns the HostedClusters whose kube-apiserver or etcd
// pods are on node.
func (r *Reconciler) clustersOnNode(ctx context.Context, node string) ([]types.NamespacedName, error) {
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.MatchingLabelsSelector{Selector: servingPods}, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return nil, fmt.Errorf("failed to list the kube-apiserver and etcd pods of node %s: %w", node, err)
	}
	var clusters []types.NamespacedName
	seen := map[string]bool{}
	for _, p := range pods.Items {
		if seen[p.Namespace] {
			continue
		}
		seen[p.Namespace] = true
		hcs := &hyperv1.HostedClusterList{}
		if err := r.Client.List(ctx, hcs, client.MatchingFields{controlPlaneNamespaceIndex: p.Namespace}); err != nil {
			return clusters, fmt.Errorf("failed to list the HostedClusters of control-plane namespace %s: %w", p.Namespace, err)
		}
		for i := range hcs.Items {
			clusters = append(clusters, client.ObjectKeyFromObject(&hcs.Items[i]))
		}
	}
	return clusters, nil
}
