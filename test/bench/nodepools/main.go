// Command nodepools measures how soon a NodePool's machines serve a hosted
// cluster, on the local cluster (test/localcluster) and its real nodes: a
// HostedCluster with a real control plane, run by the real operators, and
// NodePools of platform None whose machines are real nodes (kubelet and
// containerd in network namespaces of their own) that join with what the
// pool's join Secret holds, as a user's machines do.
//
// For each pool size (-sizes, 1,3,5 by default) it creates a NodePool with
// the CLI and starts its machines at once, and times, from the create
// request: the join Secret published, the last Node Ready in the hosted
// cluster (what kubectl get nodes shows), and the NodePool Ready (what
// kubectl get np shows; the hypershift-operator counts the nodes every 5 s
// while it waits). Then it scales the last pool up by one machine. The
// anchor, timed in the same run, is the same kubelet joining the management
// cluster itself (its nodes' start to Ready): each result is also given as
// a ratio to it. Last, the memory of each worker node's own processes
// (containerd and the kubelet, VmRSS). With -pod (the default) it first
// does the same for NodePools of platform Pod, whose machines the
// management cluster runs (pod.go), times a rolling replacement of a pool
// of 3, and destroys that cluster before platform None's pools start.
//
// Run it with
//
//	make bench-nodepools
//
// which writes the section nodepools of docs/benchmarks.md; with
// -report=false it only prints.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/cmd/install"
	"github.com/hypershift-le/hypershift/cmd/kubeconfig"
	"github.com/hypershift-le/hypershift/cmd/nodepool"
	"github.com/hypershift-le/hypershift/test/bench/report"
	"github.com/hypershift-le/hypershift/test/localcluster"
	"github.com/hypershift-le/hypershift/test/nodes"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var (
	sizes       = flag.String("sizes", "1,3,5", "The NodePool sizes to measure, one pool each.")
	mgmtNodes   = flag.Int("nodes", 2, "How many real nodes the management cluster runs (the anchor).")
	writeReport = flag.Bool("report", true, "Write the results into docs/benchmarks.md.")
	timeout     = flag.Duration("timeout", 40*time.Minute, "Give up, stopping everything, after this long.")
	podPlatform = flag.Bool("pod", true, "Also measure NodePools of platform Pod (machines the management cluster runs).")
)

const namespace, clusterName = "clusters", "bench"

func main() { os.Exit(run()) }

func run() int {
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var counts []int
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "invalid -sizes %q\n", *sizes)
			return 2
		}
		counts = append(counts, n)
	}
	b, err := start(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	defer func() {
		if err := b.lc.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "failed to stop the local cluster: %v\n", err)
		}
	}()
	started := time.Now()
	res, err := b.measure(ctx, counts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	body := fmt.Sprintf("## NodePools: machines joining a hosted cluster\n\nCommand: `%s` (took %s). Machine: %s.\n\n%s",
		report.CommandLine("make bench-nodepools", "./test/bench/nodepools"), time.Since(started).Round(time.Second), b.machine, res.markdown())
	fmt.Println("\n" + body)
	if !*writeReport {
		return 0
	}
	path, err := report.Write("nodepools", body)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("wrote section nodepools of %s\n", path)
	return 0
}

// bench is a local cluster with the hypershift-operator and a hosted
// cluster.
type bench struct {
	lc      *localcluster.Cluster
	hosted  client.Client
	machine string
	joined  int
}

func start(ctx context.Context) (*bench, error) {
	root, err := testenv.RepositoryRoot()
	if err != nil {
		return nil, err
	}
	state, err := os.MkdirTemp("", "bench-nodepools-")
	if err != nil {
		return nil, err
	}
	lc, err := localcluster.Start(ctx, localcluster.Options{BinDir: filepath.Join(root, "bin"), StateDir: state, Nodes: *mgmtNodes, WaitForNodes: 30 * time.Minute})
	if err != nil {
		return nil, fmt.Errorf("the local cluster did not start: %w", err)
	}
	b := &bench{lc: lc, machine: report.Machine(lc.Env)}
	fail := func(err error) (*bench, error) { return nil, errors.Join(err, lc.Stop()) }
	pullSecret := filepath.Join(state, "pull-secret.json")
	if err := os.WriteFile(pullSecret, []byte(`{"auths":{}}`), 0o600); err != nil {
		return fail(err)
	}
	if _, err := b.execute(ctx, install.NewCommand(), "--hypershift-image="+lc.Registry.Image("hypershift", "latest"),
		"--insecure-registries="+lc.Registry.Host, "--wait-until-available", "--timeout=3m"); err != nil {
		return fail(err)
	}
	if _, err := b.execute(ctx, cluster.NewCreateCommand(), "cluster", "none", "--name="+clusterName, "--namespace="+namespace,
		"--release-image="+lc.Registry.Releases[localcluster.Versions[0]], "--pull-secret="+pullSecret, "--wait", "--timeout=10m"); err != nil {
		return fail(err)
	}
	hc := &hyperv1.HostedCluster{}
	if err := lc.Env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, hc); err != nil {
		return fail(err)
	}
	data, err := kubeconfig.Get(ctx, lc.Env.Client, hc)
	if err != nil {
		return fail(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return fail(err)
	}
	if b.hosted, err = client.New(cfg, client.Options{}); err != nil {
		return fail(err)
	}
	fmt.Printf("machine: %s\nHostedCluster %s/%s serves its API\n", b.machine, namespace, clusterName)
	return b, nil
}

// execute runs a CLI command in-process against the management cluster.
func (b *bench) execute(ctx context.Context, cmd *cobra.Command, args ...string) (string, error) {
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--kubeconfig="+b.lc.Kubeconfig))
	cmd.SetContext(ctx)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil {
		return out.String(), fmt.Errorf("%s %v: %w\n%s", cmd.Name(), args, err, out.String())
	}
	return out.String(), nil
}

// poolRun is one pool's timings, from its create request.
type poolRun struct {
	size                           int
	join, nodesReady, poolReady    time.Duration
	perNode                        []time.Duration // each machine's own start to Ready
	scaleNodeReady, scalePoolReady time.Duration   // scale-up by one, from the patch
}

type results struct {
	anchor []time.Duration // the management cluster's nodes, start to Ready
	pools  []poolRun
	memory []int64 // kB per worker node: containerd + kubelet VmRSS
	pod    *podResults
}

func (b *bench) measure(ctx context.Context, counts []int) (*results, error) {
	res := &results{}
	for _, n := range b.lc.Nodes {
		res.anchor = append(res.anchor, n.Ready.Sub(n.Started))
	}
	fmt.Printf("anchor: the management cluster's nodes, start to Ready: %v\n", res.anchor)
	// Platform Pod first, then its cluster destroyed: each platform is
	// timed on a machine that runs no other pool's nodes.
	if *podPlatform {
		pod, err := b.podPlatform(ctx, counts)
		if err != nil {
			return nil, err
		}
		res.pod = pod
	}
	for i, size := range counts {
		run, err := b.pool(ctx, fmt.Sprintf("pool%d", size), size, i == len(counts)-1)
		if err != nil {
			return nil, err
		}
		res.pools = append(res.pools, run)
	}
	for _, n := range b.lc.Joined {
		kb, err := nodeMemory(n)
		if err != nil {
			return nil, err
		}
		res.memory = append(res.memory, kb)
	}
	return res, nil
}

// pool creates NodePool name of size machines, joins them at once, and
// times it; with scale, it then adds one machine.
func (b *bench) pool(ctx context.Context, name string, size int, scale bool) (poolRun, error) {
	run := poolRun{size: size}
	created := time.Now()
	if _, err := b.execute(ctx, nodepool.NewCreateCommand(), "none", name, "--cluster-name="+clusterName, "-n", namespace, "--replicas="+strconv.Itoa(size)); err != nil {
		return run, err
	}
	join := &corev1.Secret{}
	if err := poll(ctx, time.Minute, func() error {
		return b.lc.Env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: hyperv1.NodePoolJoinSecretName(name)}, join)
	}); err != nil {
		return run, fmt.Errorf("NodePool %s published no join Secret: %w", name, err)
	}
	run.join = time.Since(created)
	started, err := b.joinMachines(ctx, name, join, size)
	if err != nil {
		return run, err
	}
	run.nodesReady = time.Since(created)
	for _, n := range started {
		run.perNode = append(run.perNode, n.Ready.Sub(n.Started))
	}
	if err := b.awaitPoolReady(ctx, name, size); err != nil {
		return run, err
	}
	run.poolReady = time.Since(created)
	fmt.Printf("NodePool %s: join Secret %s, %d nodes Ready %s, pool Ready %s after the create\n", name, run.join.Round(time.Millisecond), size, run.nodesReady.Round(time.Millisecond), run.poolReady.Round(time.Millisecond))
	if !scale {
		return run, nil
	}
	scaled, err := b.scalePool(ctx, name, size+1)
	if err != nil {
		return run, err
	}
	if _, err := b.joinMachines(ctx, name, join, 1); err != nil {
		return run, err
	}
	run.scaleNodeReady = time.Since(scaled)
	if err := b.awaitPoolReady(ctx, name, size+1); err != nil {
		return run, err
	}
	run.scalePoolReady = time.Since(scaled)
	fmt.Printf("NodePool %s scaled to %d: the new node Ready %s, pool Ready %s after the patch\n", name, size+1, run.scaleNodeReady.Round(time.Millisecond), run.scalePoolReady.Round(time.Millisecond))
	return run, nil
}

// joinMachines starts count machines of pool at once, with the join
// Secret's material only, and returns once all are Ready.
func (b *bench) joinMachines(ctx context.Context, pool string, join *corev1.Secret, count int) ([]*nodes.Node, error) {
	out := make([]*nodes.Node, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	for i := range count {
		name := fmt.Sprintf("%s-%d", pool, b.joined+i)
		wg.Go(func() {
			out[i], errs[i] = b.lc.JoinNode(ctx, localcluster.JoinOptions{
				Name: name, BootstrapKubeconfig: join.Data[hyperv1.BootstrapKubeconfigKey], ClientCA: join.Data[hyperv1.CACertKey],
				KubeletConfig: join.Data[hyperv1.KubeletConfigKey], Client: b.hosted,
			})
		})
	}
	wg.Wait()
	b.joined += count
	return out, errors.Join(errs...)
}

// scalePool sets NodePool name's replicas, and returns when it asked.
func (b *bench) scalePool(ctx context.Context, name string, replicas int) (time.Time, error) {
	np := &hyperv1.NodePool{}
	if err := b.lc.Env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, np); err != nil {
		return time.Time{}, err
	}
	asked := time.Now()
	patch := client.MergeFrom(np.DeepCopy())
	np.Spec.Replicas = ptr.To(int32(replicas))
	return asked, b.lc.Env.Client.Patch(ctx, np, patch)
}

func (b *bench) awaitPoolReady(ctx context.Context, name string, want int) error {
	return poll(ctx, 2*time.Minute, func() error {
		np := &hyperv1.NodePool{}
		if err := b.lc.Env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, np); err != nil {
			return err
		}
		c := meta.FindStatusCondition(np.Status.Conditions, hyperv1.Ready)
		if c == nil || c.Status != metav1.ConditionTrue || np.Status.Replicas != int32(want) {
			return fmt.Errorf("NodePool %s: replicas %d, Ready %+v", name, np.Status.Replicas, c)
		}
		return nil
	})
}

func poll(ctx context.Context, limit time.Duration, f func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// nodeMemory is the VmRSS, in kB, of a node's containerd and kubelet: the
// processes whose command line names the node's own files.
func nodeMemory(n *nodes.Node) (int64, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var total int64
	found := 0
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		kubelet := slices.Contains(args, "--hostname-override="+n.Name)
		containerd := len(args) > 2 && filepath.Base(args[0]) == "containerd" && strings.Contains(strings.Join(args, " "), "/nodes/"+n.Name+"/containerd.toml")
		if !kubelet && !containerd {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", p.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				total += kb
				found++
			}
		}
	}
	if found < 2 {
		return 0, fmt.Errorf("node %s: found %d of its containerd and kubelet processes", n.Name, found)
	}
	return total, nil
}

// memoryLine reports the memory of what (containerd and the kubelet,
// VmRSS) per node, in kB, and its mean; "" without nodes.
func memoryLine(what string, kbs []int64) string {
	if len(kbs) == 0 {
		return ""
	}
	var each []string
	var sum int64
	for _, kb := range kbs {
		each = append(each, fmt.Sprintf("%.0f", float64(kb)/1024))
		sum += kb
	}
	return fmt.Sprintf("\nMemory of %s (containerd and the kubelet, VmRSS, MiB): %s; mean %.0f MiB.\n", what, strings.Join(each, ", "), float64(sum)/float64(len(kbs))/1024)
}

func (r *results) markdown() string {
	anchor := slices.Max(r.anchor)
	ratio := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(anchor)) }
	ms := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	var s strings.Builder
	fmt.Fprintf(&s, "Anchor: the management cluster's own nodes, the same kubelet and containerd, from their start to Ready: %v (the slowest, %s, is 1.00).\n\n", r.anchor, ms(anchor))
	s.WriteString("| NodePool | join Secret published | all nodes Ready (kubectl get nodes) | ratio | NodePool Ready (kubectl get np) | ratio | each machine, start to Ready |\n|---|---|---|---|---|---|---|\n")
	for _, p := range r.pools {
		var each []string
		for _, d := range p.perNode {
			each = append(each, ms(d))
		}
		fmt.Fprintf(&s, "| %d nodes | %s | %s | %s | %s | %s | %s |\n", p.size, ms(p.join), ms(p.nodesReady), ratio(p.nodesReady), ms(p.poolReady), ratio(p.poolReady), strings.Join(each, ", "))
	}
	last := r.pools[len(r.pools)-1]
	fmt.Fprintf(&s, "\nScale-up of NodePool of %d by one machine: the new node Ready %s (ratio %s), the NodePool Ready with %d nodes %s (ratio %s) after the patch.\n",
		last.size, ms(last.scaleNodeReady), ratio(last.scaleNodeReady), last.size+1, ms(last.scalePoolReady), ratio(last.scalePoolReady))
	s.WriteString(memoryLine("each worker node's own processes", r.memory))
	s.WriteString("\nGoals (issue): one node Ready <= 10 s after the NodePool is created, 5 nodes <= 30 s. Machines start at once but their kubelets start one at a time (the device-plugin socket is one path on this machine), so larger pools are serialized there. The NodePool's Ready follows the nodes within the hypershift-operator's 5 s count. Platform None's machines are the user's: a rolling replacement is measured on platform Pod below.\n")
	if r.pod != nil {
		s.WriteString("\n" + r.pod.markdown(anchor))
	}
	return s.String()
}
