package e2e

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/cmd/nodepool"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/internal/pods"
	"github.com/hypershift-le/hypershift/test/localcluster"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// machinesCluster is the HostedCluster of platform Pod of the machines
// story.
const machinesCluster = "pods"

// testMachines follows a HostedCluster of platform Pod, whose NodePool's
// machines the management cluster runs as Pods (cluster-api's
// MachineDeployment of PodMachines, each a containerd and kubelet in a
// privileged Pod): the pool's two machines join as Ready nodes; a
// Deployment of two replicas spread over them answers by its Service's
// name on the hosted pod network; the pool scales up to 3; a new release
// replaces the 3 machines one at a time while a client polling the
// Service sees no failed request; the pool scales down with a
// PodDisruptionBudget respected (the node drained, then deleted); a machine whose kubelet stops is
// replaced (autoRepair); the cluster-api manager wrote only while it held
// its Lease; and the cluster's destruction removes the pool's machines
// first.
func testMachines(t *testing.T) {
	created := time.Now()
	execute(t, cluster.NewCreateCommand(), "cluster", "pod", "--name="+machinesCluster, "--namespace=clusters",
		"--release-image="+lc.Registry.Releases[localcluster.Versions[0]], "--pull-secret="+pullSecret(t, `{"auths":{}}`),
		"--node-pool-replicas=2", "--wait", "--timeout=6m")
	t.Logf("HostedCluster %s of platform Pod Available %s after create", machinesCluster, time.Since(created).Round(time.Second))
	h := hosted(t, machinesCluster)
	hc := hostedClient(t, h)
	pool := &hyperv1.NodePool{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: machinesCluster}}
	awaitPool(t, pool, 2, localcluster.Versions[0], 5*time.Minute)
	t.Logf("NodePool %s Ready with 2 nodes %s after create", pool.Name, time.Since(created).Round(time.Second))

	t.Run("each machine is a Pod of the control-plane namespace, its Node the pool's", func(t *testing.T) {
		testMachineNodes(t, hc, 2)
	})
	nodePort := startWeb(t, h, hc)
	t.Run("the machines and the hosted kube-apiserver reach the management cluster only through the published endpoint", func(t *testing.T) {
		testIsolation(t, h, hc)
	})
	t.Run("the pool scales up", func(t *testing.T) {
		testScaleUp(t, hc, pool)
	})
	t.Run("a new release replaces the 3 machines one at a time, no request lost", func(t *testing.T) {
		testRollingReplace(t, hc, pool, nodePort)
	})
	t.Run("the pool scales down, the removed node drained", func(t *testing.T) {
		testScaleDown(t, hc, pool, localcluster.Versions[1], nodePort)
	})
	t.Run("a machine whose kubelet stops is replaced", func(t *testing.T) {
		testAutoRepair(t, hc, pool)
	})
	t.Run("a second pool made with the CLI joins, and when deleted its machine is drained and its Node removed", func(t *testing.T) {
		testSecondPool(t, hc)
	})
	t.Run("the cluster-api manager writes only while it holds its Lease", func(t *testing.T) {
		testClusterAPIWritesInHolding(t)
	})
	t.Run("destroy removes the machines first, not held by the PodDisruptionBudget", func(t *testing.T) {
		// The web Deployment's budget allows no eviction of its last
		// server: a drain would wait on it for good. A cluster's
		// machines go undrained with it.
		started := time.Now()
		execute(t, cluster.NewDestroyCommand(), "cluster", machinesCluster, "--namespace=clusters", "--wait", "--timeout=6m")
		t.Logf("destroyed in %s", time.Since(started).Round(time.Second))
		machinePods := &corev1.PodList{}
		if err := lc.Env.Client.List(t.Context(), machinePods, client.MatchingLabels{"app": "machine"}); err != nil {
			t.Fatal(err)
		}
		if len(machinePods.Items) > 0 {
			t.Errorf("machine Pods outlive their cluster: %d", len(machinePods.Items))
		}
	})
}

// hostedClient is a controller-runtime client of h.
func hostedClient(t *testing.T, h *hostedCluster) client.Client {
	t.Helper()
	raw, err := os.ReadFile(h.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// awaitPool waits until pool is Ready with replicas nodes of version.
func awaitPool(t *testing.T, pool *hyperv1.NodePool, replicas int32, version string, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(pool), pool); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(pool.Status.Conditions, hyperv1.Ready)
		if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration < pool.Generation ||
			pool.Status.Replicas != replicas || pool.Status.Version != version {
			var summary []string
			for _, c := range pool.Status.Conditions {
				summary = append(summary, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Message))
			}
			return fmt.Errorf("NodePool %s: %d nodes, version %q, %s", pool.Name, pool.Status.Replicas, pool.Status.Version, strings.Join(summary, "; "))
		}
		return nil
	})
}

// testMachineNodes checks each machine: a running Pod of the control-plane
// namespace with no credentials of the management cluster, whose Node
// carries its provider ID, its address, the pool's label and the pod
// network's, and a pod subnet of the cluster network.
func testMachineNodes(t *testing.T, hc client.Client, want int) {
	machinePods := &corev1.PodList{}
	if err := lc.Env.Client.List(t.Context(), machinePods, client.InNamespace(controlPlaneNamespace(machinesCluster)), client.MatchingLabels{"app": "machine"}); err != nil {
		t.Fatal(err)
	}
	if len(machinePods.Items) != want {
		t.Fatalf("%d machine Pods, want %d", len(machinePods.Items), want)
	}
	for _, p := range machinePods.Items {
		if ptr.Deref(p.Spec.AutomountServiceAccountToken, true) {
			t.Errorf("machine Pod %s mounts a token of the management cluster", p.Name)
		}
		node := &corev1.Node{}
		if err := hc.Get(t.Context(), client.ObjectKey{Name: p.Name}, node); err != nil {
			t.Errorf("no Node for machine %s: %v", p.Name, err)
			continue
		}
		var internal string
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				internal = a.Address
			}
		}
		if node.Spec.ProviderID != "pod://"+p.Namespace+"/"+p.Name || internal != p.Status.PodIP ||
			node.Labels[hyperv1.NodePoolLabel] != machinesCluster || node.Labels[hyperv1.PodNetworkNodeLabel] != "true" ||
			!strings.HasPrefix(node.Spec.PodCIDR, "10.13") {
			t.Errorf("Node %s: providerID %q, InternalIP %s (Pod at %s), labels %v, podCIDR %s", node.Name, node.Spec.ProviderID, internal, p.Status.PodIP, node.Labels, node.Spec.PodCIDR)
		}
	}
}

// startWeb runs a Deployment of two echo servers spread over the nodes,
// at most one of them unavailable (a PodDisruptionBudget), behind a
// NodePort Service; a client on each node reaches them by the Service's
// name. It returns the node port.
func startWeb(t *testing.T, h *hostedCluster, hc client.Client) int32 {
	t.Helper()
	echo := pushEcho(t)
	ns := metav1.NamespaceDefault
	server := pods.New(ns, "web", "", echo, "/usr/bin/echo", "serve", ":8080")
	server.Spec.AutomountServiceAccountToken = ptr.To(false)
	server.Spec.RestartPolicy = corev1.RestartPolicyAlways
	server.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: server.Labels},
	}}
	server.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}
	// An evicted server answers for 10s more: what a drained pod's
	// endpoint takes to leave every machine's kube-proxy (each syncs at
	// most once a second, and several machines share two cores here), as
	// a preStop sleep does for a production server.
	server.Spec.Containers[0].Env = append(server.Spec.Containers[0].Env, corev1.EnvVar{Name: "ECHO_SHUTDOWN_DELAY", Value: "10s"})
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: server.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: server.Labels}, Spec: server.Spec},
		},
	}
	budget := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: server.Labels}},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: server.Labels, Ports: []corev1.ServicePort{{
			Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP,
		}}},
	}
	for _, obj := range []client.Object{web, budget, svc} {
		if err := hc.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 2*time.Minute, func() error {
		if err := hc.Get(t.Context(), client.ObjectKeyFromObject(web), web); err != nil {
			return err
		}
		if web.Status.AvailableReplicas != 2 {
			return fmt.Errorf("deployment web: %d of 2 replicas available", web.Status.AvailableReplicas)
		}
		return nil
	})
	nodes := &corev1.NodeList{}
	if err := hc.List(t.Context(), nodes); err != nil {
		t.Fatal(err)
	}
	// From each machine, across the pod network to a server on either.
	for _, n := range nodes.Items {
		caller := pods.New(ns, "web-client-"+n.Name, n.Name, echo, "/usr/bin/echo", "connect", "web.default.svc.cluster.local:80")
		caller.Spec.AutomountServiceAccountToken = ptr.To(false)
		caller = pods.Run(t, hc, caller, corev1.PodSucceeded)
		if log := h.kubectl(t, "logs", "-n", ns, caller.Name); !strings.HasPrefix(log, "echo from web-") {
			t.Errorf("the client on %s through Service web by name: %q, want a server's", n.Name, log)
		}
	}
	if out := h.kubectl(t, "exec", "-n", ns, "deploy/web", "--", "/usr/bin/echo", "connect", "127.0.0.1:8080"); !strings.HasPrefix(out, "echo from web-") {
		t.Errorf("kubectl exec in a server's container: %q", out)
	}
	if err := hc.Get(t.Context(), client.ObjectKeyFromObject(svc), svc); err != nil {
		t.Fatal(err)
	}
	return svc.Spec.Ports[0].NodePort
}

// scalePool sets the pool's replicas with kubectl scale (its scale
// subresource), as a user does.
func scalePool(t *testing.T, pool *hyperv1.NodePool, replicas int) {
	t.Helper()
	root, err := testenv.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), filepath.Join(root, "bin", "kubectl"), "--kubeconfig="+lc.Kubeconfig,
		"scale", "nodepool", pool.Name, "-n", pool.Namespace, "--replicas="+strconv.Itoa(replicas)).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl scale np %s: %v\n%s", pool.Name, err, out)
	}
}

// testScaleUp scales the pool from 2 to 3: a node joins.
func testScaleUp(t *testing.T, hc client.Client, pool *hyperv1.NodePool) {
	started := time.Now()
	scalePool(t, pool, 3)
	awaitPool(t, pool, 3, localcluster.Versions[0], 3*time.Minute)
	t.Logf("scaled up to 3: the new node Ready and the pool Ready %s after kubectl scale", time.Since(started).Round(time.Second))
	testMachineNodes(t, hc, 3)
}

// testScaleDown scales the pool (of version) from 3 to 2 while the
// Service is polled: the removed machine's node is drained (the budget
// keeps one server available: no request fails) and its Node deleted.
func testScaleDown(t *testing.T, hc client.Client, pool *hyperv1.NodePool, version string, nodePort int32) {
	poller := pollService(t, hc, nodePort)
	started := time.Now()
	scalePool(t, pool, 2)
	awaitPool(t, pool, 2, version, 3*time.Minute)
	testutil.Eventually(t, 2*time.Minute, func() error {
		nodes := &corev1.NodeList{}
		if err := hc.List(t.Context(), nodes); err != nil {
			return err
		}
		if len(nodes.Items) != 2 {
			return fmt.Errorf("%d Nodes, want the removed machine's deleted", len(nodes.Items))
		}
		return nil
	})
	ok, failed, failures := poller.finish()
	t.Logf("scaled down to 2: the node drained and deleted %s after kubectl scale; the Service answered %d requests, %d failed", time.Since(started).Round(time.Second), ok, failed)
	if failed > 0 || ok == 0 {
		t.Errorf("the Service answered %d and failed %d requests while a node was drained: %v", ok, failed, failures)
	}
	drained := ""
	for _, e := range machineEvents(t, "SuccessfulDrainNode") {
		drained += e + "; "
	}
	if drained == "" {
		t.Error("cluster-api reported no drained node")
	}
}

// machineEvents are the messages of cluster-api's events of reason in the
// control-plane namespace.
func machineEvents(t *testing.T, reason string) []string {
	t.Helper()
	events := &corev1.EventList{}
	if err := lc.Env.Client.List(t.Context(), events, client.InNamespace(controlPlaneNamespace(machinesCluster))); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events.Items {
		if e.Reason == reason {
			out = append(out, e.InvolvedObject.Name+": "+e.Message)
		}
	}
	return out
}

// testRollingReplace upgrades the cluster, then the pool, while the
// Service is polled: the pool's machines are replaced one at a time (a new one
// first: maxSurge 1, maxUnavailable 0), UpdatingVersion says so, no
// request fails, and the pool's version follows.
func testRollingReplace(t *testing.T, hc client.Client, pool *hyperv1.NodePool, nodePort int32) {
	next := lc.Registry.Releases[localcluster.Versions[1]]
	execute(t, cluster.NewUpdateCommand(), "cluster", machinesCluster, "-n", "clusters", "--release-image="+next, "--wait", "--timeout=6m")
	old := map[string]bool{}
	nodes := &corev1.NodeList{}
	if err := hc.List(t.Context(), nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		old[n.Name] = true
	}
	poller := pollService(t, hc, nodePort)
	started := time.Now()
	patch := client.MergeFrom(pool.DeepCopy())
	pool.Spec.Release.Image = next
	if err := lc.Env.Client.Patch(t.Context(), pool, patch); err != nil {
		t.Fatal(err)
	}
	sawUpdating, most := false, 0
	testutil.Eventually(t, 6*time.Minute, func() error {
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(pool), pool); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(pool.Status.Conditions, hyperv1.UpdatingVersion); c != nil && c.Status == metav1.ConditionTrue {
			sawUpdating = true
		}
		machines := &clusterv1.MachineList{}
		if err := lc.Env.Client.List(t.Context(), machines, client.InNamespace(controlPlaneNamespace(machinesCluster))); err == nil {
			most = max(most, len(machines.Items))
		}
		if pool.Status.Version != localcluster.Versions[1] {
			return fmt.Errorf("NodePool %s at version %q", pool.Name, pool.Status.Version)
		}
		return nil
	})
	replicas := *pool.Spec.Replicas
	awaitPool(t, pool, replicas, localcluster.Versions[1], 3*time.Minute)
	rolled := time.Since(started)
	ok, failed, failures := poller.finish()
	t.Logf("rolling replace of %d machines: %s; at most %d machines at once; the Service answered %d requests, %d failed", replicas, rolled.Round(time.Second), most, ok, failed)
	if failed > 0 || ok == 0 {
		t.Errorf("the Service answered %d and failed %d requests during the rolling replace (nodes of the earlier release: %v): %v", ok, failed, slices.Sorted(maps.Keys(old)), failures)
	}
	if !sawUpdating {
		t.Error("UpdatingVersion was never True during the rollout")
	}
	if most > int(replicas)+1 {
		t.Errorf("%d machines at once: more than replicas + maxSurge 1", most)
	}
	if err := hc.List(t.Context(), nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if old[n.Name] {
			t.Errorf("node %s of the earlier release is still there", n.Name)
		}
	}
}

// testAutoRepair turns autoRepair on (not Ready for 20s: replaced), stops
// the kubelet of one machine (SIGSTOP: the node stops reporting, as a
// hung machine does) and waits until that machine is replaced by a new
// Ready node.
func testAutoRepair(t *testing.T, hc client.Client, pool *hyperv1.NodePool) {
	patch := client.MergeFrom(pool.DeepCopy())
	pool.Spec.Management.AutoRepair = true
	if pool.Annotations == nil {
		pool.Annotations = map[string]string{}
	}
	pool.Annotations["hypershift.openshift.io/machine-health-check-timeout"] = "20s"
	if err := lc.Env.Client.Patch(t.Context(), pool, patch); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, func() error {
		return lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: controlPlaneNamespace(machinesCluster), Name: pool.Name}, &clusterv1.MachineHealthCheck{})
	})
	nodes := &corev1.NodeList{}
	if err := hc.List(t.Context(), nodes); err != nil {
		t.Fatal(err)
	}
	victim := nodes.Items[0].Name
	pid := kubeletPID(t, victim)
	stopped := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	sawUnhealthy := false
	testutil.Eventually(t, 5*time.Minute, func() error {
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(pool), pool); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(pool.Status.Conditions, hyperv1.AllNodesHealthy); c != nil && c.Status == metav1.ConditionFalse {
			sawUnhealthy = true
		}
		err := hc.Get(t.Context(), client.ObjectKey{Name: victim}, &corev1.Node{})
		switch {
		case err == nil:
			return fmt.Errorf("node %s of the stopped kubelet is still there", victim)
		case !apierrors.IsNotFound(err):
			return err
		}
		return nil
	})
	awaitPool(t, pool, 2, localcluster.Versions[1], 3*time.Minute)
	t.Logf("the machine of node %s was replaced, and the pool Ready with 2 nodes, %s after its kubelet stopped", victim, time.Since(stopped).Round(time.Second))
	if !sawUnhealthy {
		t.Error("AllNodesHealthy was never False while a node did not report")
	}
	if len(machineEvents(t, "MachineMarkedUnhealthy")) == 0 {
		t.Error("the MachineHealthCheck marked no machine unhealthy")
	}
}

// testSecondPool creates a pool of one machine with hypershift create
// nodepool pod, then deletes it: the NodePool goes only once its machine
// is gone, and its Node with it.
func testSecondPool(t *testing.T, hc client.Client) {
	started := time.Now()
	execute(t, nodepool.NewCreateCommand(), "pod", "extra", "--cluster-name="+machinesCluster, "-n", "clusters", "--replicas=1", "--wait", "--timeout=5m")
	extra := &hyperv1.NodePool{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "extra"}}
	awaitPool(t, extra, 1, localcluster.Versions[1], time.Minute)
	t.Logf("NodePool extra Ready with 1 node %s after hypershift create nodepool pod", time.Since(started).Round(time.Second))
	nodes := &corev1.NodeList{}
	if err := hc.List(t.Context(), nodes, client.MatchingLabels{hyperv1.NodePoolLabel: "extra"}); err != nil || len(nodes.Items) != 1 {
		t.Fatalf("Nodes of pool extra: %d (%v)", len(nodes.Items), err)
	}
	node := nodes.Items[0].Name

	started = time.Now()
	if err := lc.Env.Client.Delete(t.Context(), extra); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 3*time.Minute, func() error {
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(extra), &hyperv1.NodePool{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("NodePool extra is still there (%w)", err)
		}
		return nil
	})
	t.Logf("NodePool extra gone %s after its deletion", time.Since(started).Round(time.Second))
	if err := hc.Get(t.Context(), client.ObjectKey{Name: node}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s of the deleted pool is still there (%v)", node, err)
	}
	machines := &clusterv1.MachineList{}
	if err := lc.Env.Client.List(t.Context(), machines, client.InNamespace(controlPlaneNamespace(machinesCluster)), client.MatchingLabels{hyperv1.NodePoolLabel: "extra"}); err != nil || len(machines.Items) > 0 {
		t.Errorf("machines of the deleted pool: %d (%v)", len(machines.Items), err)
	}
	if !slices.ContainsFunc(machineEvents(t, "SuccessfulDrainNode"), func(e string) bool { return strings.Contains(e, node) }) {
		t.Errorf("cluster-api reported no drain of node %s: %v", node, machineEvents(t, "SuccessfulDrainNode"))
	}
}

// kubeletPID finds the process of the kubelet of machine node on this
// machine (the nodes share its process table).
func kubeletPID(t *testing.T, node string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasSuffix(args[0], "kubelet") && strings.Contains(string(cmdline), "--hostname-override="+node+"\x00") {
			return pid
		}
	}
	t.Fatalf("no kubelet process of machine %s", node)
	return 0
}

// testClusterAPIWritesInHolding reads the audit log: every write of the
// cluster-api manager's ServiceAccount came from the pod holding its
// Lease at the time.
func testClusterAPIWritesInHolding(t *testing.T) {
	user := "system:serviceaccount:" + controlPlaneNamespace(machinesCluster) + ":" + hyperv1.ClusterAPIName
	writes := auditlog.Writes(auditEvents(t), auditlog.Query{Users: []string{user}, SucceededOnly: true})
	counted := checkWritesInHolding(t, "cluster-api", writes)
	t.Logf("%d cluster-api writes, all by its Lease holder", counted)
}
