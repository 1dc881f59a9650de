// Command devcluster runs the whole system on this machine in the
// foreground: the local cluster (real etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, real nodes with kubelet,
// containerd and kube-proxy, CoreDNS, a local-path provisioner, a registry
// with two release payloads and every image), the hypershift-operator
// installed by `hypershift install`, and a demo HostedCluster, published on
// a NodePort of a node, that it waits to serve its API; it writes the demo's admin
// kubeconfig into the state directory and prints how to use it. It is what `make run` starts; Ctrl-C or `make stop` stops it
// and removes its state, unless it runs with --keep-state (`make run
// KEEP=1`): then its state stays when it stops, and the next run with
// --keep-state carries on from it, with the same objects, claims and data.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hypershift-le/hypershift/cmd/install"
	"github.com/hypershift-le/hypershift/test/localcluster"
	"github.com/hypershift-le/hypershift/test/nodes"
)

func main() {
	// It reports through its own output and the CLI's; controller-runtime's
	// clients have nothing to log, and must not warn that no logger was set.
	ctrllog.SetLogger(logr.Discard())
	// A flag set of its own: controller-runtime registers --kubeconfig on
	// the global one.
	flags := flag.NewFlagSet("devcluster", flag.ExitOnError)
	binDir := flags.String("bin", "bin", "the directory holding the built binaries")
	stateDir := flags.String("state", "bin/dev", "where the cluster keeps its state while it runs")
	stop := flags.Bool("stop", false, "stop a running devcluster")
	keep := flags.Bool("keep-state", false, "keep the cluster's state when it stops, and carry on from a kept state at start; with --stop, keep the state of a cluster that is not running")
	nodeCount := flags.Int("nodes", 2, "how many real nodes run the pods (at least 1)")
	_ = flags.Parse(os.Args[1:])
	if *nodeCount < 1 {
		fmt.Fprintf(os.Stderr, "devcluster: --nodes=%d: the local cluster needs at least one node (make run NODES=n, n >= 1)\n", *nodeCount)
		os.Exit(2)
	}
	pidFile := filepath.Join(*stateDir, "devcluster.pid")
	var err error
	if *stop {
		err = stopRunning(pidFile, *stateDir, *keep)
	} else {
		err = run(*binDir, *stateDir, pidFile, *keep, *nodeCount)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
		os.Exit(1)
	}
}

func run(binDir, stateDir, pidFile string, keep bool, nodeCount int) error {
	if pid, alive := running(pidFile); alive {
		return fmt.Errorf("a local cluster is already running (pid %d): run `make stop` first", pid)
	}
	binDir, err := filepath.Abs(binDir)
	if err != nil {
		return err
	}
	stateDir, err = filepath.Abs(stateDir)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	resumed := false
	if keep {
		_, err := os.Stat(filepath.Join(stateDir, "control-plane"))
		resumed = err == nil
	}
	what := fmt.Sprintf("etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a registry, %d real nodes (kubelet, containerd, kube-proxy), CoreDNS and a local-path provisioner", nodeCount)
	if resumed {
		fmt.Printf("Starting %s from the state kept in %s...\n", what, stateDir)
	} else {
		fmt.Printf("Starting %s...\n", what)
	}
	started := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: binDir, StateDir: stateDir, KeepState: keep, Nodes: nodeCount})
	if err != nil {
		return err
	}
	defer func() {
		if keep {
			fmt.Printf("Stopping the local cluster; its state stays in %s (make run KEEP=1 carries on from it)...\n", stateDir)
		} else {
			fmt.Println("Stopping the local cluster and removing its state...")
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
		}
	}()
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return fmt.Errorf("failed to write %s: %w", pidFile, err)
	}
	for _, n := range c.Nodes {
		fmt.Printf("Node %s is Ready at %s\n", n.Name, n.Address)
	}
	fmt.Printf("The management cluster runs (%s)\n", time.Since(started).Round(100*time.Millisecond))

	installArgs := []string{"--kubeconfig=" + c.Kubeconfig,
		"--hypershift-image=" + c.Registry.Image("hypershift", "latest"), "--wait-until-available", "--timeout=3m",
		// The operators read the payloads from the registry at an address
		// of the nodes' network, over plain HTTP.
		"--insecure-registries=" + c.Registry.Host}
	// The hosted clusters' machines and webhook calls may not reach the
	// management cluster.
	installArgs = append(installArgs, c.IsolationArgs()...)
	if err := execute(ctx, install.NewCommand(), installArgs...); err != nil {
		return err
	}
	pullSecret := filepath.Join(stateDir, "pull-secret.json")
	if err := os.WriteFile(pullSecret, []byte(`{"auths":{}}`), 0o600); err != nil {
		return err
	}
	if err := createDemo(ctx, c, pullSecret); err != nil {
		return err
	}
	hostedKubeconfig, server, err := writeDemoKubeconfig(ctx, c, stateDir)
	if err != nil {
		return fmt.Errorf("failed to write the demo's kubeconfig: %w", err)
	}
	raw, err := os.ReadFile(hostedKubeconfig)
	if err != nil {
		return err
	}
	if err := awaitDemoWorkers(ctx, c, raw); err != nil {
		return err
	}
	fmt.Printf(`
The local cluster runs, with HostedCluster clusters/demo Available: a real
etcd, kube-apiserver, kube-controller-manager and kube-scheduler, its API at
%[6]s (a NodePort of a node), and NodePool clusters/demo's workers: machines
the management cluster runs for it (platform Pod: each a Pod of clusters-demo
with its own containerd and kubelet, made by cluster-api), with kube-proxy,
CoreDNS and the pod network.
Use the hosted cluster (its admin kubeconfig, as hypershift create kubeconfig prints it):
  bin/hypershift create kubeconfig --kubeconfig=%[1]s --name=demo --namespace=clusters > %[7]s
  kubectl --kubeconfig=%[7]s get nodes
  kubectl --kubeconfig=%[7]s run hello --image=%[8]s --restart=Never --command -- /usr/bin/hypershift version --client
  kubectl --kubeconfig=%[7]s logs hello
  kubectl --kubeconfig=%[7]s create configmap hello --from-literal=who=me
Watch the management cluster:
  export KUBECONFIG=%[1]s
  bin/hypershift get leaders -A
  kubectl get hostedclusters,nodepools -A
  kubectl -n clusters-demo get pods,machines,podmachines -o wide
Scale the workers (new machines join; removed ones are drained first):
  kubectl scale nodepool demo -n clusters --replicas=3
Upgrade it to the second payload (the control-plane-operator, then etcd, the kube-apiserver, the controllers):
  bin/hypershift update cluster demo --kubeconfig=%[1]s --release-image=%[2]s --wait
Logs of every pod: kubectl logs (through the kubelets)   The nodes' own: %[3]s/nodes/<node>/*.log
Audit log: %[4]s
Press Ctrl-C (or run make stop) to stop it%[5]s.
`, c.Kubeconfig, c.Registry.Releases[localcluster.Versions[1]], stateDir, c.Env.AuditLogPath, stopNote(keep), server, hostedKubeconfig, c.Registry.Image("hypershift", "latest"))
	<-ctx.Done()
	return nil
}

// execute runs a CLI command in-process, printing what it prints.
func execute(ctx context.Context, cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetContext(ctx)
	cmd.SilenceUsage = true
	return cmd.Execute()
}

// running reads the pid file and reports whether that process is alive.
func running(pidFile string) (int, bool) {
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

func stopNote(keep bool) string {
	if keep {
		return "; its state stays for the next make run KEEP=1"
	}
	return " and remove its state"
}

// stopRunning asks a running devcluster to stop and waits for it; the
// devcluster keeps or removes its state as it was started. With no
// devcluster running, it undoes what a killed one left on the machine,
// and removes the state unless keep.
func stopRunning(pidFile, stateDir string, keep bool) error {
	pid, alive := running(pidFile)
	if !alive {
		fmt.Println("No local cluster is running.")
		// Taking the lock on real nodes undoes what a killed one left
		// (its network, mounts, cgroups, sysctls) before its state goes.
		if lock, err := nodes.TakeLock(0); err == nil {
			_ = lock.Release()
		}
		if keep {
			return nil
		}
		return os.RemoveAll(stateDir)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("failed to signal pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			fmt.Printf("Stopped the local cluster (pid %d).\n", pid)
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("the local cluster did not stop within 90s")
}
