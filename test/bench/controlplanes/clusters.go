package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/cmd/kubeconfig"
	"github.com/hypershift-le/hypershift/test/localcluster"
)

// namespace holds the benchmark's HostedClusters.
const namespace = "clusters"

// create creates the HostedCluster name with the CLI, its API published
// on a NodePort of a node (the CLI's default), and returns when the
// create request was sent.
func (b *bench) create(ctx context.Context, name string) (time.Time, error) {
	created := time.Now()
	_, err := b.execute(ctx, cluster.NewCreateCommand(), "cluster", "none", "--name="+name, "--namespace="+namespace,
		"--release-image="+b.lc.Registry.Releases[localcluster.Versions[0]], "--pull-secret="+b.pullSecret)
	return created, err
}

// timeToAPI waits until the hosted cluster's namespaces can be listed
// with its admin kubeconfig, and returns how long after created that was.
func (b *bench) timeToAPI(ctx context.Context, name string, created time.Time) (time.Duration, error) {
	ticker := time.NewTicker(*poll)
	defer ticker.Stop()
	var last string
	for {
		if err := b.listNamespaces(ctx, name); err == nil {
			return time.Since(created), nil
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("HostedCluster %s: the hosted API did not answer (%s): %w", name, last, ctx.Err())
		case <-ticker.C:
		}
	}
}

// listNamespaces lists the hosted cluster's namespaces as `kubectl get
// ns` does, with the kubeconfig its HostedCluster reports.
func (b *bench) listNamespaces(ctx context.Context, name string) error {
	hc := &hyperv1.HostedCluster{}
	if err := b.lc.Env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, hc); err != nil {
		return err
	}
	data, err := kubeconfig.Get(ctx, b.lc.Env.Client, hc)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	hosted, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = hosted.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	return err
}

// destroy deletes the HostedCluster name and waits until it is gone.
func (b *bench) destroy(ctx context.Context, name string) error {
	_, err := b.execute(ctx, cluster.NewDestroyCommand(), "cluster", "--name="+name, "--namespace="+namespace, "--wait", "--timeout=5m")
	return err
}
