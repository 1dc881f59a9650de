// Command kubelet is the Kubernetes node agent, built from k8s.io/kubernetes
// at the version pinned in this module, for the local cluster's real nodes
// (test/nodes).
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"

	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	// The root context of this process, as the kubelet's own main has it.
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
