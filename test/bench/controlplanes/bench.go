package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hypershift-le/hypershift/cmd/install"
	"github.com/hypershift-le/hypershift/test/bench/report"
	"github.com/hypershift-le/hypershift/test/localcluster"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// bench is a local cluster with the hypershift-operator installed.
type bench struct {
	lc         *localcluster.Cluster
	state      string
	pullSecret string
	machine    string
}

// start starts the local cluster, on addresses of its own, and installs
// the hypershift-operator.
func start(ctx context.Context) (*bench, error) {
	root, err := testenv.RepositoryRoot()
	if err != nil {
		return nil, err
	}
	state, err := os.MkdirTemp("", "bench-controlplanes-")
	if err != nil {
		return nil, err
	}
	startCtx, cancel := context.WithTimeout(ctx, 35*time.Minute) // waiting for other real nodes included
	defer cancel()
	lc, err := localcluster.Start(startCtx, localcluster.Options{
		BinDir: filepath.Join(root, "bin"), StateDir: state,
		Nodes: *nodeCount, WaitForNodes: 30 * time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("the local cluster did not start: %w", err)
	}
	b := &bench{lc: lc, state: state, pullSecret: filepath.Join(state, "pull-secret.json"), machine: report.Machine(lc.Env)}
	fmt.Printf("machine: %s\nstate: %s\n", b.machine, state)
	if err := os.WriteFile(b.pullSecret, []byte(`{"auths":{}}`), 0o600); err != nil {
		return nil, errors.Join(err, b.stop())
	}
	if _, err := b.execute(ctx, install.NewCommand(), "--hypershift-image="+lc.Registry.Image("hypershift", "latest"),
		"--insecure-registries="+lc.Registry.Host, "--wait-until-available", "--timeout=3m"); err != nil {
		return nil, errors.Join(err, b.stop())
	}
	return b, nil
}

func (b *bench) stop() error {
	return b.lc.Stop()
}

// execute runs a CLI command in-process against the local cluster.
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
