// Package cluster implements `hypershift create cluster` and `hypershift
// destroy cluster`: the HostedCluster, its namespace and pull secret, and
// waiting, with progress a user can read, for it to come up (until its
// admin kubeconfig works) or go away.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cli"
	"github.com/hypershift-le/hypershift/cmd/install"
)

// CreateOptions are the flags of `hypershift create cluster none`.
type CreateOptions struct {
	Name, Namespace, ReleaseImage, PullSecretFile string
	AvailabilityPolicy                            string
	InfraID, ClusterID                            string
	// ExternalAPIServerAddress is where clients reach the kube-apiserver's
	// NodePort; empty means the first node's address.
	ExternalAPIServerAddress string
	Render, Wait             bool
	Timeout                  time.Duration
	kube                     cli.KubeconfigFlags
}

// NewCreateCommand returns `hypershift create` with `cluster none`.
func NewCreateCommand() *cobra.Command {
	create := &cobra.Command{Use: "create", Short: "Create hosted clusters", Example: "  hypershift create cluster none --name=demo --release-image=quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64 --pull-secret=pull-secret.json"}
	clusterCmd := &cobra.Command{Use: "cluster", Short: "Create a HostedCluster", Example: "  hypershift create cluster none --name=demo --release-image=quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64 --pull-secret=pull-secret.json"}
	o := &CreateOptions{}
	none := &cobra.Command{
		Use:   "none",
		Short: "Create a HostedCluster on platform None (workers brought by you)",
		Example: `  # Create a cluster and wait until its API answers with the admin kubeconfig
  hypershift create cluster none --name=demo --namespace=clusters \
    --release-image=quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64 \
    --pull-secret=pull-secret.json --external-api-server-address=api.demo.example.com --wait --timeout=20m
  hypershift create kubeconfig --name=demo --namespace=clusters > demo.kubeconfig

  # Print the objects instead of creating them
  hypershift create cluster none --name=demo --release-image=... --pull-secret=pull-secret.json --render`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	fs := none.Flags()
	fs.StringVar(&o.Name, "name", "", "The HostedCluster's name (required).")
	fs.StringVar(&o.Namespace, "namespace", "clusters", "The HostedCluster's namespace; created when missing.")
	fs.StringVar(&o.ReleaseImage, "release-image", "", "The release payload pull spec (required).")
	fs.StringVar(&o.PullSecretFile, "pull-secret", "", "A file with the registry credentials (.dockerconfigjson) (required).")
	fs.StringVar(&o.AvailabilityPolicy, "control-plane-availability-policy", string(hyperv1.SingleReplica), "SingleReplica or HighlyAvailable.")
	fs.StringVar(&o.InfraID, "infra-id", "", "The infrastructure ID; generated from the name when empty.")
	fs.StringVar(&o.ClusterID, "cluster-id", "", "The cluster ID (a UUID); generated when empty.")
	fs.BoolVar(&o.Render, "render", false, "Print the objects as YAML instead of creating them.")
	fs.StringVar(&o.ExternalAPIServerAddress, "external-api-server-address", "",
		"The address (IP or DNS name) clients reach the kube-apiserver's NodePort on; by default the first node's ExternalDNS, ExternalIP or InternalIP address.")
	fs.BoolVar(&o.Wait, "wait", false, "Wait until the HostedCluster is Available and a request with its admin kubeconfig succeeds.")
	fs.DurationVar(&o.Timeout, "timeout", 20*time.Minute, "How long --wait waits.")
	o.kube.AddFlags(fs)
	for _, flag := range []string{"name", "release-image", "pull-secret"} {
		_ = none.MarkFlagRequired(flag)
	}
	clusterCmd.AddCommand(none)
	create.AddCommand(clusterCmd)
	return create
}

// Objects returns the namespace, pull secret and HostedCluster to create.
// The kube-apiserver is published on a NodePort at
// ExternalAPIServerAddress, when there is one.
func (o *CreateOptions) Objects(pullSecret []byte) []client.Object {
	infraID := o.InfraID
	if infraID == "" {
		infraID = o.Name + "-" + utilrand.String(5)
	}
	clusterID := o.ClusterID
	if clusterID == "" {
		clusterID = string(uuid.NewUUID())
	}
	secretName := o.Name + "-pull-secret"
	return []client.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}},
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: secretName},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: pullSecret},
		},
		&hyperv1.HostedCluster{
			TypeMeta:   metav1.TypeMeta{APIVersion: hyperv1.GroupVersion.String(), Kind: "HostedCluster"},
			ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
			Spec: hyperv1.HostedClusterSpec{
				Release:                      hyperv1.Release{Image: o.ReleaseImage},
				ControllerAvailabilityPolicy: hyperv1.AvailabilityPolicy(o.AvailabilityPolicy),
				Platform:                     hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
				PullSecret:                   hyperv1.LocalObjectReference{Name: secretName},
				InfraID:                      infraID,
				ClusterID:                    clusterID,
				Services:                     o.services(),
			},
		},
	}
}

// services publishes the kube-apiserver on a NodePort at
// ExternalAPIServerAddress, as HyperShift's platform None does.
func (o *CreateOptions) services() []hyperv1.ServicePublishingStrategyMapping {
	if o.ExternalAPIServerAddress == "" {
		return nil
	}
	return []hyperv1.ServicePublishingStrategyMapping{{
		Service: hyperv1.APIServer,
		ServicePublishingStrategy: hyperv1.ServicePublishingStrategy{
			Type:     hyperv1.NodePort,
			NodePort: &hyperv1.NodePortPublishingStrategy{Address: o.ExternalAPIServerAddress},
		},
	}}
}

func (o *CreateOptions) validate() error {
	switch hyperv1.AvailabilityPolicy(o.AvailabilityPolicy) {
	case hyperv1.SingleReplica, hyperv1.HighlyAvailable:
	default:
		return fmt.Errorf("invalid --control-plane-availability-policy %q: use SingleReplica or HighlyAvailable", o.AvailabilityPolicy)
	}
	if strings.TrimSpace(o.Name) == "" || strings.TrimSpace(o.ReleaseImage) == "" {
		return fmt.Errorf("--name and --release-image must not be empty")
	}
	return nil
}

// Run creates (or with --render prints) the cluster.
func (o *CreateOptions) Run(ctx context.Context, out io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	pullSecret, err := os.ReadFile(o.PullSecretFile)
	if err != nil {
		return fmt.Errorf("failed to read --pull-secret: %w", err)
	}
	if o.Render {
		return install.Render(out, "yaml", o.Objects(pullSecret))
	}
	c, cfg, err := o.kube.Connect()
	if err != nil {
		return err
	}
	if err := o.checkControlPlaneNamespace(ctx, c); err != nil {
		return cli.Explain(cfg.Host, err)
	}
	if o.ExternalAPIServerAddress == "" {
		if o.ExternalAPIServerAddress, err = nodeAddress(ctx, c, out); err != nil {
			return cli.Explain(cfg.Host, err)
		}
	}
	for _, obj := range o.Objects(pullSecret) {
		kind := obj.GetObjectKind().GroupVersionKind().Kind // Create clears it
		err := c.Create(ctx, obj)
		switch {
		case err == nil:
			_, _ = fmt.Fprintf(out, "%s %s created\n", kind, key(obj))
		case apierrors.IsAlreadyExists(err):
			if _, isCluster := obj.(*hyperv1.HostedCluster); isCluster {
				return fmt.Errorf("HostedCluster %s already exists: pick another --name, or run hypershift destroy cluster first", key(obj))
			}
			_, _ = fmt.Fprintf(out, "%s %s exists, left as it is\n", kind, key(obj))
		default:
			return cli.Explain(cfg.Host, fmt.Errorf("failed to create %s %s: %w", kind, key(obj), err))
		}
	}
	if !o.Wait {
		return nil
	}
	// One deadline for both waits.
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	k := client.ObjectKey{Namespace: o.Namespace, Name: o.Name}
	if err := waitAvailable(ctx, c, k, o.Timeout, out); err != nil {
		return cli.Explain(cfg.Host, err)
	}
	return cli.Explain(cfg.Host, waitKubeconfig(ctx, c, k, o.Timeout, out))
}

// checkControlPlaneNamespace refuses, before anything is created, a cluster
// whose control-plane namespace belongs to another HostedCluster or exists
// without belonging to one: the hypershift-operator would refuse it with
// the same message. What the user may not read is left to the operator.
func (o *CreateOptions) checkControlPlaneNamespace(ctx context.Context, c client.Client) error {
	cluster := o.Namespace + "/" + o.Name
	name := hyperv1.ControlPlaneNamespace(o.Namespace, o.Name)
	ns := &corev1.Namespace{}
	switch err := c.Get(ctx, client.ObjectKey{Name: name}, ns); {
	case err == nil:
		if owner := ns.Annotations[hyperv1.ClusterAnnotation]; owner != cluster {
			return errors.New(hyperv1.ControlPlaneNamespaceConflictMessage(cluster, name, owner))
		}
	case !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
		return fmt.Errorf("failed to get namespace %s: %w", name, err)
	}
	list := &hyperv1.HostedClusterList{}
	switch err := c.List(ctx, list); {
	case err == nil:
		for _, hc := range list.Items {
			other := hc.Namespace + "/" + hc.Name
			if other != cluster && hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name) == name {
				return errors.New(hyperv1.ControlPlaneNamespaceConflictMessage(cluster, name, other))
			}
		}
	case !apierrors.IsForbidden(err):
		return fmt.Errorf("failed to list HostedClusters: %w", err)
	}
	return nil
}

func key(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
