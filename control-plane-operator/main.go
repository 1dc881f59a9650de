// Command control-plane-operator runs one hosted control plane's components,
// acting only while it holds the control plane's Lease.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/hypershift-le/hypershift/control-plane-operator/auditlogs"
	"github.com/hypershift-le/hypershift/control-plane-operator/etcdsnapshot"
	"github.com/hypershift-le/hypershift/control-plane-operator/operator"
	"github.com/hypershift-le/hypershift/support/version"
)

func main() {
	root := &cobra.Command{
		Use:          "control-plane-operator",
		Short:        "Run a hosted control plane's components while holding its Lease",
		Example:      "  control-plane-operator run --namespace=clusters-demo\n  control-plane-operator audit-logs --path=/var/log/kube-apiserver/audit.log\n  control-plane-operator etcd-snapshot serve --etcd-endpoint=https://10.0.0.5:2379 --etcd-server-name=etcd-client --etcd-tls-dir=/etc/etcd/client\n  control-plane-operator version",
		SilenceUsage: true,
	}
	root.AddCommand(operator.NewRunCommand(), auditlogs.NewCommand(), etcdsnapshot.NewCommand(), version.NewCommand("control-plane-operator"))
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
