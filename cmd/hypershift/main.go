// Command hypershift is the project's CLI: it installs the hypershift-operator,
// creates, updates and destroys hosted clusters, prints their kubeconfigs, and shows
// who leads each one.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hypershift-le/hypershift/cmd/cli"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/cmd/etcdbackup"
	"github.com/hypershift-le/hypershift/cmd/get"
	"github.com/hypershift-le/hypershift/cmd/install"
	"github.com/hypershift-le/hypershift/cmd/kubeconfig"
	"github.com/hypershift-le/hypershift/cmd/nodepool"
	"github.com/hypershift-le/hypershift/cmd/versions"
	"github.com/hypershift-le/hypershift/support/version"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "hypershift",
		Short: "Install the hypershift-operator and manage hosted control planes",
		Example: `  hypershift install --wait-until-available
  hypershift create cluster none demo --release-image=quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64 --pull-secret=pull-secret.json --wait
  hypershift create kubeconfig demo > demo.kubeconfig
  hypershift create nodepool none workers --cluster-name=demo --replicas=2 --output-dir=./join
  hypershift update cluster demo --release-image=quay.io/openshift-release-dev/ocp-release:4.17.1-x86_64 --wait
  hypershift get leaders -A
  hypershift create etcd-backup demo-nightly --cluster-name=demo --claim-name=backups --wait
  hypershift destroy cluster demo --wait`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(),
	}
	create := cluster.NewCreateCommand()
	create.AddCommand(kubeconfig.NewCommand(), nodepool.NewCreateCommand(), etcdbackup.NewCreateCommand())
	root.AddCommand(install.NewCommand(), create, cluster.NewUpdateCommand(), cluster.NewDestroyCommand(), get.NewCommand(), versions.NewCommand())
	return root
}

func main() {
	// The CLI reports through its own output; controller-runtime's clients
	// have nothing to log to, and must not warn that no logger was set.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	interrupted := ctx.Err() != nil
	stop()
	if err != nil && interrupted {
		// As a shell reports a command ended by SIGINT: 128 + 2.
		fmt.Fprintln(os.Stderr, "interrupted")
		os.Exit(130)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error: "+cli.OneLine(err))
		os.Exit(1)
	}
}
