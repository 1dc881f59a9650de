package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/cmd/kubeconfig"
	"github.com/hypershift-le/hypershift/cmd/nodepool"
	"github.com/hypershift-le/hypershift/test/localcluster"
	"github.com/hypershift-le/hypershift/test/nodes"
)

// The managed platform: a HostedCluster of platform Pod, whose NodePools'
// machines the management cluster runs (cluster-api makes a Pod per
// machine, with its own containerd and kubelet). The same sizes are timed
// from `hypershift create nodepool pod` to the nodes Ready, then a scale-up
// by one, a rolling replacement of a pool of 3 onto the next release, and
// the memory of each machine's containerd and kubelet.

const podClusterName = "bench-pods"

// podRun is one pool's timings on platform Pod, from its create request.
type podRun struct {
	size                   int
	nodesReady, poolReady  time.Duration
	scaleNode, scalePool   time.Duration // scale-up by one, from the patch
	replaced, replacedPool time.Duration // rolling replace, from the patch
	replacedMost           int           // most machines of the pool at once during it
	timeline               string        // the first machine's steps (timeline.String)
}

type podResults struct {
	clusterAvailable time.Duration
	// cacheReady is when the machine image was on every management node
	// (the cluster's machine image cache Ready on each), from the create;
	// cacheNodes is on how many.
	cacheReady time.Duration
	cacheNodes int32
	pools      []podRun
	memory     []int64 // kB per machine: containerd + kubelet VmRSS
}

// podPlatform creates the cluster of platform Pod and measures its pools.
func (b *bench) podPlatform(ctx context.Context, counts []int) (*podResults, error) {
	res := &podResults{}
	pullSecret := filepath.Join(os.TempDir(), "bench-nodepools-pull-secret.json")
	if err := os.WriteFile(pullSecret, []byte(`{"auths":{}}`), 0o600); err != nil {
		return nil, err
	}
	created := time.Now()
	if _, err := b.execute(ctx, cluster.NewCreateCommand(), "cluster", "pod", "--name="+podClusterName, "--namespace="+namespace,
		"--release-image="+b.lc.Registry.Releases[localcluster.Versions[0]], "--pull-secret="+pullSecret, "--wait", "--timeout=10m"); err != nil {
		return nil, err
	}
	res.clusterAvailable = time.Since(created)
	hc := &hyperv1.HostedCluster{}
	if err := b.lc.Env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: podClusterName}, hc); err != nil {
		return nil, err
	}
	data, err := kubeconfig.Get(ctx, b.lc.Env.Client, hc)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, err
	}
	hosted, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	fmt.Printf("HostedCluster %s/%s of platform Pod Available %s after create\n", namespace, podClusterName, res.clusterAvailable.Round(time.Second))
	if res.cacheNodes, err = awaitMachineImageCache(ctx, b.lc.Env.Client, hc); err != nil {
		return nil, err
	}
	res.cacheReady = time.Since(created)
	fmt.Printf("Its machine image on all %d management nodes %s after create\n", res.cacheNodes, res.cacheReady.Round(100*time.Millisecond))
	for i, size := range counts {
		run, err := b.podPool(ctx, hosted, fmt.Sprintf("pod%d", size), size, i == len(counts)-1)
		if err != nil {
			return nil, err
		}
		res.pools = append(res.pools, run)
	}
	// The rolling replace: the cluster first (a pool may not be newer),
	// then a pool of 3 onto it.
	i := slices.IndexFunc(res.pools, func(r podRun) bool { return r.size == 3 })
	if i >= 0 {
		if _, err := b.execute(ctx, cluster.NewUpdateCommand(), "cluster", podClusterName, "-n", namespace,
			"--release-image="+b.lc.Registry.Releases[localcluster.Versions[1]], "--wait", "--timeout=10m"); err != nil {
			return nil, err
		}
		if err := b.podReplace(ctx, hosted, &res.pools[i]); err != nil {
			return nil, err
		}
	}
	memory, err := machineMemory(ctx, b)
	if err != nil {
		return nil, err
	}
	res.memory = memory
	destroyed := time.Now()
	if _, err := b.execute(ctx, cluster.NewDestroyCommand(), "cluster", podClusterName, "--namespace="+namespace, "--wait", "--timeout=10m"); err != nil {
		return nil, err
	}
	fmt.Printf("HostedCluster %s/%s of platform Pod and its %d machines destroyed in %s\n", namespace, podClusterName, len(memory), time.Since(destroyed).Round(time.Second))
	return res, nil
}

// awaitMachineImageCache waits until hc's machine image cache has pulled
// the machine image on every node of the management cluster (one Ready pod
// on each), and returns on how many nodes.
func awaitMachineImageCache(ctx context.Context, c client.Client, hc *hyperv1.HostedCluster) (int32, error) {
	key := client.ObjectKey{Namespace: hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name), Name: hyperv1.MachineImageCacheName}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		ds := &appsv1.DaemonSet{}
		err := c.Get(ctx, key, ds)
		if err == nil && ds.Status.DesiredNumberScheduled > 0 && ds.Status.NumberReady == ds.Status.DesiredNumberScheduled && ds.Status.UpdatedNumberScheduled == ds.Status.DesiredNumberScheduled {
			return ds.Status.NumberReady, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("the machine image cache %s is not Ready on every node (status %+v, last read: %w)", key, ds.Status, errors.Join(ctx.Err(), err))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// machineReport says where each machine of the cluster stands (its Pod's
// phase and node, its Machine's phase): printed when a pool is late.
func (b *bench) machineReport(ctx context.Context) string {
	ns := hyperv1.ControlPlaneNamespace(namespace, podClusterName)
	var lines []string
	pods := &corev1.PodList{}
	if err := b.lc.Env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "machine"}); err == nil {
		for _, p := range pods.Items {
			why := ""
			for _, c := range p.Status.Conditions {
				if c.Status != corev1.ConditionTrue && c.Message != "" {
					why += " " + string(c.Type) + ": " + c.Message
				}
			}
			lines = append(lines, fmt.Sprintf("  Pod %s: %s on %q%s", p.Name, p.Status.Phase, p.Spec.NodeName, why))
		}
	}
	machines := &clusterv1.MachineList{}
	if err := b.lc.Env.Client.List(ctx, machines, client.InNamespace(ns)); err == nil {
		for _, m := range machines.Items {
			node := ""
			if m.Status.NodeRef.IsDefined() {
				node = m.Status.NodeRef.Name
			}
			lines = append(lines, fmt.Sprintf("  Machine %s: %s, node %q", m.Name, m.Status.Phase, node))
		}
	}
	return strings.Join(lines, "\n")
}

// podPool creates NodePool name of size machines and times it; with scale,
// it then adds one machine.
func (b *bench) podPool(ctx context.Context, hosted client.Client, name string, size int, scale bool) (podRun, error) {
	run := podRun{size: size}
	created := time.Now()
	watching, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	timelines := make(chan *timeline, 1)
	go func() { timelines <- b.watchTimeline(watching, hosted, name, created) }()
	if _, err := b.execute(ctx, nodepool.NewCreateCommand(), "pod", name, "--cluster-name="+podClusterName, "-n", namespace, "--replicas="+strconv.Itoa(size)); err != nil {
		return run, err
	}
	if err := awaitPoolNodes(ctx, hosted, name, size); err != nil {
		return run, fmt.Errorf("%w; the machines:\n%s", err, b.machineReport(ctx))
	}
	run.nodesReady = time.Since(created)
	run.timeline = (<-timelines).String()
	fmt.Printf("NodePool %s, its first machine: %s\n", name, run.timeline)
	if err := b.awaitPoolReady(ctx, name, size); err != nil {
		return run, err
	}
	run.poolReady = time.Since(created)
	fmt.Printf("NodePool %s (platform Pod): %d nodes Ready %s, pool Ready %s after the create\n", name, size, run.nodesReady.Round(time.Millisecond), run.poolReady.Round(time.Millisecond))
	if !scale {
		return run, nil
	}
	scaled, err := b.scalePool(ctx, name, size+1)
	if err != nil {
		return run, err
	}
	if err := awaitPoolNodes(ctx, hosted, name, size+1); err != nil {
		return run, err
	}
	run.scaleNode = time.Since(scaled)
	if err := b.awaitPoolReady(ctx, name, size+1); err != nil {
		return run, err
	}
	run.scalePool = time.Since(scaled)
	fmt.Printf("NodePool %s scaled to %d: the new node Ready %s, pool Ready %s after the patch\n", name, size+1, run.scaleNode.Round(time.Millisecond), run.scalePool.Round(time.Millisecond))
	return run, nil
}

// podReplace moves the pool of run onto the next release and times the
// rolling replacement: until every node is a new machine's and Ready, and
// until the pool reports the new version and Ready.
func (b *bench) podReplace(ctx context.Context, hosted client.Client, run *podRun) error {
	name := fmt.Sprintf("pod%d", run.size)
	old := map[string]bool{}
	list := &corev1.NodeList{}
	if err := hosted.List(ctx, list, client.MatchingLabels{hyperv1.NodePoolLabel: name}); err != nil {
		return err
	}
	for _, n := range list.Items {
		old[n.Name] = true
	}
	np := &hyperv1.NodePool{}
	if err := b.lc.Env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, np); err != nil {
		return err
	}
	started := time.Now()
	patch := client.MergeFrom(np.DeepCopy())
	np.Spec.Release.Image = b.lc.Registry.Releases[localcluster.Versions[1]]
	if err := b.lc.Env.Client.Patch(ctx, np, patch); err != nil {
		return err
	}
	if err := poll(ctx, 10*time.Minute, func() error {
		machines := &clusterv1.MachineList{}
		if err := b.lc.Env.Client.List(ctx, machines, client.InNamespace(hyperv1.ControlPlaneNamespace(namespace, podClusterName)), client.MatchingLabels{hyperv1.NodePoolLabel: name}); err == nil {
			run.replacedMost = max(run.replacedMost, len(machines.Items))
		}
		list := &corev1.NodeList{}
		if err := hosted.List(ctx, list, client.MatchingLabels{hyperv1.NodePoolLabel: name}); err != nil {
			return err
		}
		fresh := 0
		for _, n := range list.Items {
			if old[n.Name] {
				return fmt.Errorf("node %s of the old release is still there", n.Name)
			}
			if nodes.Ready(&n) {
				fresh++
			}
		}
		if fresh != run.size {
			return fmt.Errorf("%d of %d new nodes Ready", fresh, run.size)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("NodePool %s was not replaced: %w", name, err)
	}
	run.replaced = time.Since(started)
	if err := poll(ctx, 5*time.Minute, func() error {
		if err := b.awaitPoolReady(ctx, name, run.size); err != nil {
			return err
		}
		if err := b.lc.Env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, np); err != nil {
			return err
		}
		if np.Status.Version != localcluster.Versions[1] {
			return fmt.Errorf("NodePool %s at version %q", name, np.Status.Version)
		}
		return nil
	}); err != nil {
		return err
	}
	run.replacedPool = time.Since(started)
	fmt.Printf("NodePool %s replaced onto %s: its %d nodes new and Ready %s, the pool at the version and Ready %s after the patch; at most %d of its machines at once\n",
		name, localcluster.Versions[1], run.size, run.replaced.Round(time.Millisecond), run.replacedPool.Round(time.Millisecond), run.replacedMost)
	return nil
}

// awaitPoolNodes waits until want Nodes of pool are Ready in the hosted
// cluster.
func awaitPoolNodes(ctx context.Context, hosted client.Client, pool string, want int) error {
	return poll(ctx, 5*time.Minute, func() error {
		list := &corev1.NodeList{}
		if err := hosted.List(ctx, list, client.MatchingLabels{hyperv1.NodePoolLabel: pool}); err != nil {
			return err
		}
		ready := 0
		for _, n := range list.Items {
			if nodes.Ready(&n) {
				ready++
			}
		}
		if ready != want {
			return fmt.Errorf("NodePool %s: %d of %d nodes Ready", pool, ready, want)
		}
		return nil
	})
}

// machineMemory is, per machine Pod of the cluster, the VmRSS in kB of its
// containerd and kubelet: the children of its `hypershift-machine run`.
func machineMemory(ctx context.Context, b *bench) ([]int64, error) {
	pods := &corev1.PodList{}
	if err := b.lc.Env.Client.List(ctx, pods, client.InNamespace(hyperv1.ControlPlaneNamespace(namespace, podClusterName)), client.MatchingLabels{"app": "machine"}); err != nil {
		return nil, err
	}
	type proc struct {
		ppid int
		args []string
		rss  int64
	}
	procs := map[int]proc{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err1 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		status, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err1 != nil || err2 != nil {
			continue
		}
		p := proc{args: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				p.ppid, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				p.rss, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			}
		}
		procs[pid] = p
	}
	var out []int64
	for _, pod := range pods.Items {
		machine := -1
		for pid, p := range procs {
			if len(p.args) > 1 && filepath.Base(p.args[0]) == "hypershift-machine" && p.args[1] == "run" && slices.Contains(p.args, "--name="+pod.Name) {
				machine = pid
			}
		}
		if machine < 0 {
			return nil, fmt.Errorf("machine Pod %s: no hypershift-machine run process", pod.Name)
		}
		var total int64
		found := 0
		for _, p := range procs {
			if p.ppid == machine && (filepath.Base(p.args[0]) == "containerd" || filepath.Base(p.args[0]) == "kubelet") {
				total += p.rss
				found++
			}
		}
		if found < 2 {
			return nil, fmt.Errorf("machine Pod %s: found %d of its containerd and kubelet processes", pod.Name, found)
		}
		out = append(out, total)
	}
	return out, nil
}

func (r *podResults) markdown(anchor time.Duration) string {
	ratio := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(anchor)) }
	ms := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	var s strings.Builder
	fmt.Fprintf(&s, "### Platform Pod: machines the management cluster runs\n\nA HostedCluster of platform Pod (Available %s after `hypershift create cluster pod`); each pool made with `hypershift create nodepool pod`, its machines made by cluster-api (a MachineDeployment) as Pods of the control-plane namespace, each with its own containerd and kubelet. The cluster's machine image cache (a DaemonSet the hypershift-operator runs for platform Pod) had the machine image on all %d management nodes %s after the create; the pools are created after that, as a user's first pool comes after its cluster is Available. Ratios against the same anchor.\n\n", ms(r.clusterAvailable), r.cacheNodes, ms(r.cacheReady))
	s.WriteString("| NodePool | all nodes Ready (kubectl get nodes) | ratio | NodePool Ready (kubectl get np) | ratio |\n|---|---|---|---|---|\n")
	for _, p := range r.pools {
		fmt.Fprintf(&s, "| %d machines | %s | %s | %s | %s |\n", p.size, ms(p.nodesReady), ratio(p.nodesReady), ms(p.poolReady), ratio(p.poolReady))
	}
	s.WriteString("\nWhere the first machine of each pool spent its time, from the create request (polled every 100 ms; in parentheses, since the step before):\n\n")
	for _, p := range r.pools {
		fmt.Fprintf(&s, "- %d machines: %s\n", p.size, p.timeline)
	}
	last := r.pools[len(r.pools)-1]
	fmt.Fprintf(&s, "\nScale-up of NodePool of %d by one machine: the new node Ready %s (ratio %s), the NodePool Ready with %d nodes %s (ratio %s) after the patch.\n",
		last.size, ms(last.scaleNode), ratio(last.scaleNode), last.size+1, ms(last.scalePool), ratio(last.scalePool))
	for _, p := range r.pools {
		if p.replaced > 0 {
			fmt.Fprintf(&s, "\nRolling replace of NodePool of %d onto the next release (maxSurge 1, maxUnavailable 0): every node a new machine's and Ready %s (ratio %s), the NodePool at the new version and Ready %s (ratio %s) after the patch; at most %d machines of the pool at once.\n",
				p.size, ms(p.replaced), ratio(p.replaced), ms(p.replacedPool), ratio(p.replacedPool), p.replacedMost)
		}
	}
	s.WriteString(memoryLine("each machine", r.memory))
	s.WriteString("\nGoals (issue): one node Ready <= 10 s after the NodePool is created, 5 nodes <= 30 s, a 3-node rolling replace <= 90 s with 0 failed requests (requests are counted by the end-to-end story, `test/e2e/machines_test.go`, not here). A machine's time includes cluster-api's MachineDeployment, MachineSet and Machine passes, the Pod's scheduling and start, and its kubelet's TLS bootstrap.\n")
	return s.String()
}
