package localcluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/test/nodes"
)

// What tests do to pods: find a container's process (to kill or freeze
// it), read a container's log, and cut a pod's node off from the API
// server, through the nodes themselves.

// PodPID returns the host's process ID of a container of a pod while it
// runs.
func (c *Cluster) PodPID(ctx context.Context, namespace, name, container string) (int, bool) {
	pod := &corev1.Pod{}
	if err := c.Env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return 0, false
	}
	node := c.node(pod.Spec.NodeName)
	if node == nil {
		return 0, false
	}
	for _, s := range pod.Status.ContainerStatuses {
		if id, ok := strings.CutPrefix(s.ContainerID, "containerd://"); ok && s.Name == container && s.State.Running != nil {
			return node.ContainerPID(id)
		}
	}
	return 0, false
}

// PodLog returns the log of a container of a pod through the API server
// and the kubelet, as kubectl logs reads it.
func (c *Cluster) PodLog(ctx context.Context, namespace, name, container string) (string, error) {
	clientset, err := kubernetes.NewForConfig(c.Env.Config)
	if err != nil {
		return "", err
	}
	raw, err := clientset.CoreV1().Pods(namespace).GetLogs(name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	return string(raw), err
}

// Partition cuts the pod namespace/name off from the API server, as a
// network partition cuts a node off: from then on nothing the API says of
// the pod (its deletion included) reaches what runs it, and it writes no
// status for it, while its processes keep running: the whole node of the
// pod is cut off (its kubelet and kube-proxy; the pods' own traffic
// passes). It returns what ends the partition.
func (c *Cluster) Partition(ctx context.Context, namespace, name string) (heal func() error, err error) {
	node, err := c.nodeOf(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	server := c.APIServerOnNodes()
	if err := node.Partition(server); err != nil {
		return nil, err
	}
	return func() error { return node.Heal(server) }, nil
}

func (c *Cluster) nodeOf(ctx context.Context, namespace, name string) (*nodes.Node, error) {
	pod := &corev1.Pod{}
	if err := c.Env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return nil, err
	}
	node := c.node(pod.Spec.NodeName)
	if node == nil {
		return nil, fmt.Errorf("pod %s/%s runs on no node of this cluster (%q)", namespace, name, pod.Spec.NodeName)
	}
	return node, nil
}

func (c *Cluster) node(name string) *nodes.Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// APIServerOnNodes is the API server's host:port as the nodes reach it.
func (c *Cluster) APIServerOnNodes() string {
	port := ""
	if u, err := url.Parse(c.Env.Config.Host); err == nil {
		port = u.Port()
	}
	return net.JoinHostPort(nodes.DefaultNetwork.HostAddress().String(), port)
}

// LoseNode kills the node named name as a machine that dies (see
// nodes.Node.Lose): its kubelet, containerd and every container at once,
// the Node and Pod objects left as they are. It returns what brings the
// node back and waits until it is Ready again.
func (c *Cluster) LoseNode(name string) (comeBack func(context.Context) error, err error) {
	node := c.node(name)
	if node == nil {
		return nil, fmt.Errorf("no node %q in this cluster", name)
	}
	comeBack = func(ctx context.Context) error { return node.Return(ctx, c.host, c.Env.Client) }
	// A loss that failed half-way has killed some of the node: comeBack
	// brings it back all the same.
	return comeBack, node.Lose()
}

// PartitionNode cuts the node named name and its pods off from the API
// server, while their processes run on (see nodes.Node.PartitionWithPods):
// the kubelet stops heartbeating, and its pods' requests to the API server
// go nowhere until the partition heals. It returns what heals it.
func (c *Cluster) PartitionNode(name string) (heal func() error, err error) {
	node := c.node(name)
	if node == nil {
		return nil, fmt.Errorf("no node %q in this cluster", name)
	}
	server := c.APIServerOnNodes()
	if err := node.PartitionWithPods(server); err != nil {
		_ = node.HealWithPods(server) // the rules inserted before the failure
		return nil, err
	}
	return func() error { return node.HealWithPods(server) }, nil
}

// RestartKubelet kills the kubelet of the node named name and starts it
// again while its containers run on (see nodes.Node.RestartKubelet).
func (c *Cluster) RestartKubelet(ctx context.Context, name string) error {
	node := c.node(name)
	if node == nil {
		return fmt.Errorf("no node %q in this cluster", name)
	}
	return node.RestartKubelet(ctx, c.host, c.Env.Client)
}
