package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/kubeconfig"
)

// waitAvailable waits for Available=True, printing which condition blocks.
func waitAvailable(ctx context.Context, c client.Client, k client.ObjectKey, timeout time.Duration, out io.Writer) error {
	err := waitCluster(ctx, c, k, timeout, out, "HostedCluster %s was not Available", func(_ context.Context, hc *hyperv1.HostedCluster) (string, error) {
		if meta.IsStatusConditionTrue(hc.Status.Conditions, hyperv1.Available) {
			return "", nil
		}
		if err := terminal(hc); err != nil {
			return "", err
		}
		return blocking(hc), nil
	})
	if err == nil {
		_, _ = fmt.Fprintf(out, "HostedCluster %s is Available\n", k)
	}
	return err
}

// waitCluster reads the HostedCluster every 2s until ctx ends (timeout is
// its length, for the message) or check finds nothing in the way, and
// prints what check says stands in the way each time that changes.
// failure is the message, with the cluster's key, when it is not done.
func waitCluster(ctx context.Context, c client.Client, k client.ObjectKey, timeout time.Duration, out io.Writer, failure string,
	check func(context.Context, *hyperv1.HostedCluster) (string, error)) error {
	last := ""
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		hc := &hyperv1.HostedCluster{}
		if err := c.Get(ctx, k, hc); err != nil {
			return false, err
		}
		progress, err := check(ctx, hc)
		if err != nil {
			return false, err
		}
		if progress == "" {
			return true, nil
		}
		if progress != last {
			_, _ = fmt.Fprintln(out, "Waiting for HostedCluster "+k.String()+": "+progress)
			last = progress
		}
		return false, nil
	})
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err() // interrupted by the user
	}
	if wait.Interrupted(err) {
		// Not a failure to reach the API server: the cluster is not there yet.
		return fmt.Errorf(failure+" within %s (%s)", k, timeout, last)
	}
	var stop *terminalError
	if errors.As(err, &stop) {
		return err
	}
	if err != nil {
		return fmt.Errorf(failure+": %w", k, err)
	}
	return nil
}

// terminalError is a condition that waiting cannot change: the user must
// act.
type terminalError struct{ message string }

func (e *terminalError) Error() string { return e.message }

// terminalReasons are the condition reasons the hypershift-operator sets
// for what only the user can fix; waiting for them to change is pointless.
var terminalReasons = map[string]bool{
	hyperv1.ReleaseImageNotFoundReason:          true,
	hyperv1.ReleaseImageMalformedReason:         true,
	hyperv1.ControlPlaneNamespaceConflictReason: true,
	hyperv1.RefusedByAPIServerReason:            true,
	hyperv1.NodePortConflictReason:              true,
}

// terminal returns an error naming the condition that stops hc for good,
// as observed for its current spec (its generation); nil when none does.
func terminal(hc *hyperv1.HostedCluster) error {
	for _, t := range []string{hyperv1.ValidConfiguration, hyperv1.ValidReleaseImage} {
		cond := meta.FindStatusCondition(hc.Status.Conditions, t)
		if cond != nil && cond.Status == metav1.ConditionFalse && cond.ObservedGeneration == hc.Generation && terminalReasons[cond.Reason] {
			return &terminalError{message: fmt.Sprintf("HostedCluster %s/%s cannot become Available until its spec changes: %s=False (%s): %s",
				hc.Namespace, hc.Name, t, cond.Reason, cond.Message)}
		}
	}
	return nil
}

// blocking names the condition that holds the cluster back: a failed
// prerequisite first, then Available itself.
func blocking(hc *hyperv1.HostedCluster) string {
	if progress := notTrue(hc, false, hyperv1.ValidConfiguration, hyperv1.ValidReleaseImage, hyperv1.ReconciliationActive, hyperv1.ReconciliationSucceeded, hyperv1.Available); progress != "" {
		return progress
	}
	return "no status yet: is the hypershift-operator running?"
}

// notTrue describes the first of hc's conditions of types that is not
// True (with currentOnly, only one observed for hc's generation); "" when
// none is.
func notTrue(hc *hyperv1.HostedCluster, currentOnly bool, types ...string) string {
	for _, t := range types {
		cond := meta.FindStatusCondition(hc.Status.Conditions, t)
		if cond != nil && cond.Status != metav1.ConditionTrue && (!currentOnly || cond.ObservedGeneration == hc.Generation) {
			return fmt.Sprintf("%s=%s (%s: %s)", t, cond.Status, cond.Reason, cond.Message)
		}
	}
	return ""
}

// waitKubeconfig waits, until ctx ends (timeout is its length, for the
// message), until the HostedCluster's admin kubeconfig works: a request to
// the hosted cluster's API with it succeeds.
func waitKubeconfig(ctx context.Context, c client.Client, k client.ObjectKey, timeout time.Duration, out io.Writer) error {
	server := ""
	err := waitCluster(ctx, c, k, timeout, out, "the admin kubeconfig of HostedCluster %s did not work", func(ctx context.Context, hc *hyperv1.HostedCluster) (string, error) {
		var progress string
		server, progress = tryKubeconfig(ctx, c, hc)
		return progress, nil
	})
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "The hosted cluster's API answers at %s; print its kubeconfig with: hypershift create kubeconfig --name=%s --namespace=%s\n",
		server, k.Name, k.Namespace)
	return nil
}

// tryKubeconfig lists the hosted cluster's namespaces with its admin
// kubeconfig. It returns the server, and what stands in the way, if
// anything.
func tryKubeconfig(ctx context.Context, c client.Client, hc *hyperv1.HostedCluster) (string, string) {
	data, err := kubeconfig.Get(ctx, c, hc)
	if err != nil {
		return "", err.Error()
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return "", "its admin kubeconfig does not load: " + err.Error()
	}
	cfg.Timeout = 10 * time.Second
	hosted, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return cfg.Host, "its admin kubeconfig is not usable: " + err.Error()
	}
	if _, err := hosted.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return cfg.Host, "the hosted API at " + cfg.Host + " does not answer yet: " + err.Error()
	}
	return cfg.Host, ""
}

// nodeAddress is the address of the first node, as HyperShift's platform
// None takes it: ExternalDNS, else ExternalIP, else InternalIP. With no
// node to read (none, or none the user may list) it is an error: a
// kube-apiserver reached on its Service's ClusterIP only would be reachable
// from no client outside the management cluster.
func nodeAddress(ctx context.Context, c client.Client, out io.Writer) (string, error) {
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.Limit(1)); err != nil && !apierrors.IsForbidden(err) {
		return "", fmt.Errorf("failed to list nodes for the API server's address (or pass --external-api-server-address): %w", err)
	}
	if len(nodes.Items) > 0 {
		addresses := map[corev1.NodeAddressType]string{}
		for _, a := range nodes.Items[0].Status.Addresses {
			addresses[a.Type] = a.Address
		}
		for _, t := range []corev1.NodeAddressType{corev1.NodeExternalDNS, corev1.NodeExternalIP, corev1.NodeInternalIP} {
			if address := addresses[t]; address != "" {
				_, _ = fmt.Fprintf(out, "Publishing the kube-apiserver on a NodePort at %s, the %s of node %s\n", address, t, nodes.Items[0].Name)
				return address, nil
			}
		}
	}
	return "", errors.New("found no node address to publish the kube-apiserver's NodePort at: pass --external-api-server-address with an address of the management cluster's nodes that clients reach")
}
