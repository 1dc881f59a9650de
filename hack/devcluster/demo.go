package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/cmd/kubeconfig"
	"github.com/hypershift-le/hypershift/test/localcluster"
	"github.com/hypershift-le/hypershift/test/nodes"
)

// demoKey is the demo HostedCluster, and its NodePool.
var demoKey = client.ObjectKey{Namespace: "clusters", Name: "demo"}

// demoWorkers is how many machines the demo's NodePool has.
const demoWorkers = 2

// createDemo creates the demo HostedCluster, its API published on a
// NodePort of a node's address, as the CLI picks it, and waits until its
// admin kubeconfig works; a HostedCluster kept from an earlier run is only waited for.
func createDemo(ctx context.Context, c *localcluster.Cluster, pullSecret string) error {
	hc := &hyperv1.HostedCluster{}
	err := c.Env.Client.Get(ctx, demoKey, hc)
	if apierrors.IsNotFound(err) {
		release := c.Registry.Releases[localcluster.Versions[0]]
		args := []string{"cluster", "pod", "--kubeconfig=" + c.Kubeconfig,
			"--name=" + demoKey.Name, "--namespace=" + demoKey.Namespace, "--release-image=" + release, "--pull-secret=" + pullSecret,
			"--node-pool-replicas=" + strconv.Itoa(demoWorkers), "--wait", "--timeout=8m"}
		return execute(ctx, cluster.NewCreateCommand(), args...)
	}
	if err != nil {
		return fmt.Errorf("failed to get HostedCluster %s: %w", demoKey, err)
	}
	fmt.Printf("HostedCluster %s kept from the last run; waiting until its API answers\n", demoKey)
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 8*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := demoKubeconfig(ctx, c)
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the API of HostedCluster %s does not answer: %w", demoKey, err)
	}
	fmt.Printf("HostedCluster %s serves its API\n", demoKey)
	return nil
}

// demoKubeconfig returns the demo's admin kubeconfig once a request with
// it succeeds.
func demoKubeconfig(ctx context.Context, c *localcluster.Cluster) ([]byte, error) {
	hc := &hyperv1.HostedCluster{}
	if err := c.Env.Client.Get(ctx, demoKey, hc); err != nil {
		return nil, err
	}
	data, err := kubeconfig.Get(ctx, c.Env.Client, hc)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 5 * time.Second
	hosted, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := hosted.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, err
	}
	return data, nil
}

// writeDemoKubeconfig writes the demo's admin kubeconfig into the state
// directory, as `hypershift create kubeconfig` prints it, and returns its
// path and the API's address.
func writeDemoKubeconfig(ctx context.Context, c *localcluster.Cluster, stateDir string) (string, string, error) {
	data, err := demoKubeconfig(ctx, c)
	if err != nil {
		return "", "", err
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return "", "", err
	}
	server := ""
	if current := cfg.Contexts[cfg.CurrentContext]; current != nil && cfg.Clusters[current.Cluster] != nil {
		server = cfg.Clusters[current.Cluster].Server
	}
	path := filepath.Join(stateDir, "demo.kubeconfig")
	return path, server, os.WriteFile(path, data, 0o600)
}

// awaitDemoWorkers waits until the demo NodePool's machines (platform Pod:
// the management cluster runs them, as Pods of the control-plane namespace)
// have joined the hosted cluster and are Ready, printing each node as it
// becomes Ready.
func awaitDemoWorkers(ctx context.Context, c *localcluster.Cluster, hostedKubeconfig []byte) error {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(hostedKubeconfig)
	if err != nil {
		return err
	}
	hosted, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	pool := &hyperv1.NodePool{}
	if err := c.Env.Client.Get(ctx, demoKey, pool); apierrors.IsNotFound(err) {
		fmt.Printf("HostedCluster %s has no NodePool %s: no workers\n", demoKey, demoKey.Name)
		return nil
	} else if err != nil {
		return fmt.Errorf("failed to get NodePool %s: %w", demoKey, err)
	}
	started := time.Now()
	seen := map[string]bool{}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &corev1.NodeList{}
		if err := hosted.List(ctx, list, client.MatchingLabels{hyperv1.NodePoolLabel: pool.Name}); err != nil {
			return false, nil
		}
		for _, n := range list.Items {
			if !seen[n.Name] && nodes.Ready(&n) {
				seen[n.Name] = true
				address := ""
				for _, a := range n.Status.Addresses {
					if a.Type == corev1.NodeInternalIP {
						address = a.Address
					}
				}
				fmt.Printf("Node %s of NodePool %s (a machine Pod of %s) is Ready at %s (%s)\n", n.Name, demoKey,
					hyperv1.ControlPlaneNamespace(demoKey.Namespace, demoKey.Name), address, time.Since(started).Round(100*time.Millisecond))
			}
		}
		return len(seen) >= demoWorkers, nil
	})
	if err != nil {
		return fmt.Errorf("the machines of NodePool %s did not all join (kubectl get np,machines -A says why): %w", demoKey, err)
	}
	return nil
}
