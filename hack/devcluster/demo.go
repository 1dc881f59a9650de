package main

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/test/localcluster"
)

// createDemo creates the demo HostedCluster and waits until it is
// Available; a HostedCluster kept from an earlier run is only waited for.
func createDemo(ctx context.Context, c *localcluster.Cluster, pullSecret string) error {
	key := client.ObjectKey{Namespace: "clusters", Name: "demo"}
	hc := &hyperv1.HostedCluster{}
	err := c.Env.Client.Get(ctx, key, hc)
	if apierrors.IsNotFound(err) {
		release := c.Registry.Releases[localcluster.Versions[0]]
		return execute(ctx, cluster.NewCreateCommand(), "cluster", "none", "--kubeconfig="+c.Kubeconfig,
			"--name=demo", "--namespace=clusters", "--release-image="+release, "--pull-secret="+pullSecret, "--wait", "--timeout=5m")
	}
	if err != nil {
		return fmt.Errorf("failed to get HostedCluster %s: %w", key, err)
	}
	fmt.Printf("HostedCluster %s kept from the last run\n", key)
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Env.Client.Get(ctx, key, hc); err != nil {
			return false, nil
		}
		return meta.IsStatusConditionTrue(hc.Status.Conditions, hyperv1.Available), nil
	})
	if err != nil {
		return fmt.Errorf("HostedCluster %s is not Available: %w", key, err)
	}
	fmt.Printf("HostedCluster %s is Available\n", key)
	return nil
}
