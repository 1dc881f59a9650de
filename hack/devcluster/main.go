// Command devcluster runs the project's test control plane in the
// foreground: a real etcd and kube-apiserver with the project's CRDs and
// admission policies installed, and a cluster-admin kubeconfig for kubectl.
// It is what `make run` starts until the full local cluster exists; stop it
// with Ctrl-C, which removes its state.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hypershift-le/hypershift/test/testenv"
)

func main() {
	// A flag set of its own: controller-runtime registers --kubeconfig on
	// the global one.
	flags := flag.NewFlagSet("devcluster", flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", "bin/dev/kubeconfig", "where to write the cluster-admin kubeconfig")
	audit := flags.Bool("audit-log", true, "write the API server's audit log (its path is printed)")
	_ = flags.Parse(os.Args[1:])
	if err := run(*kubeconfig, *audit); err != nil {
		fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, audit bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	env, err := testenv.Start(startCtx, testenv.Options{AuditLog: audit})
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "devcluster: failed to stop: %v\n", err)
		}
		_ = os.Remove(kubeconfig)
	}()
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	fmt.Printf("The API server is up at %s with the HostedCluster and HostedControlPlane CRDs installed.\n", env.Config.Host)
	fmt.Printf("  export KUBECONFIG=%s\n", kubeconfig)
	fmt.Println("  kubectl get hostedclusters -A")
	if audit {
		fmt.Printf("  audit log: %s\n", env.AuditLogPath)
	}
	fmt.Println("Press Ctrl-C to stop it and remove its state.")
	<-ctx.Done()
	return nil
}
