// Command kubectl is kubectl, built from k8s.io/kubectl at the version
// pinned in this module, so tests can apply rendered manifests with the
// real client on a machine that has none.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
