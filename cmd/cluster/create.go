// Package cluster implements `hypershift create cluster`, `hypershift
// update cluster` and `hypershift destroy cluster`: the HostedCluster, its
// namespace and pull secret, its release image and credentials, and
// waiting, with progress a user can read, for it to come up (until its
// admin kubeconfig works), roll a release out, or go away.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cli"
	"github.com/hypershift-le/hypershift/cmd/install"
	"github.com/hypershift-le/hypershift/cmd/nodepool"
)

// CreateOptions are the flags of `hypershift create cluster none|pod`.
type CreateOptions struct {
	Name, Namespace, ReleaseImage, PullSecretFile string
	// Platform is the cluster's platform: None (you bring the workers) or
	// Pod (the management cluster runs them).
	Platform           hyperv1.PlatformType
	AvailabilityPolicy string
	InfraID, ClusterID string
	// ExternalAPIServerAddress is where clients reach the kube-apiserver's
	// NodePort; empty means the first node's address.
	ExternalAPIServerAddress string
	// ExternalAPIServerPort is the NodePort; 0 lets the management cluster
	// allocate one.
	ExternalAPIServerPort int32
	// NodePoolReplicas, when above 0, creates NodePool <Name> of that many
	// machines for the cluster, as HyperShift's --node-pool-replicas.
	NodePoolReplicas int32
	// EtcdBackup, when set, names the complete EtcdBackup, in Namespace,
	// whose snapshot the cluster's etcd starts from
	// (spec.etcd.restoreFrom).
	EtcdBackup              string
	Render, RenderSensitive bool
	Wait                    bool
	Timeout                 time.Duration
	kube                    cli.KubeconfigFlags
}

// NewCreateCommand returns `hypershift create` with `cluster none` and
// `cluster pod`.
func NewCreateCommand() *cobra.Command {
	create := &cobra.Command{Use: "create", Short: "Create hosted clusters, their NodePools and kubeconfigs", Example: "  hypershift create cluster none demo --release-image=quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64 --pull-secret=pull-secret.json"}
	clusterCmd := &cobra.Command{Use: "cluster", Short: "Create a HostedCluster", Example: "  hypershift create cluster none demo --release-image=quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64 --pull-secret=pull-secret.json\n  hypershift create cluster pod demo --node-pool-replicas=2 --release-image=... --pull-secret=pull-secret.json --wait"}
	clusterCmd.AddCommand(
		platformCommand(hyperv1.NonePlatform, "Create a HostedCluster on platform None (workers brought by you)",
			"platform None: you bring them, hypershift create nodepool explains how they join"),
		platformCommand(hyperv1.PodPlatform, "Create a HostedCluster on platform Pod (the management cluster runs its workers, as Pods)",
			"platform Pod: the management cluster runs them, as Pods of the control-plane namespace"),
	)
	create.AddCommand(clusterCmd)
	return create
}

// platformCommand is `hypershift create cluster <platform>`.
func platformCommand(platform hyperv1.PlatformType, short, pools string) *cobra.Command {
	o := &CreateOptions{Platform: platform}
	name := strings.ToLower(string(platform))
	cmd := &cobra.Command{
		Use:   name + " NAME",
		Short: short,
		Example: `  # Create a cluster and wait until its API answers with the admin kubeconfig
  hypershift create cluster ` + name + ` demo -n clusters \
    --release-image=quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64 \
    --pull-secret=pull-secret.json --external-api-server-address=api.demo.example.com --wait --timeout=20m
  hypershift create kubeconfig demo -n clusters > demo.kubeconfig

  # Print the objects instead of creating them
  hypershift create cluster ` + name + ` demo --release-image=... --pull-secret=pull-secret.json --render`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	cli.NameArg(cmd, &o.Name, "The HostedCluster's name (required).", true)
	fs := cmd.Flags()
	cli.AddNamespaceFlag(fs, &o.Namespace, "The HostedCluster's namespace; created when missing")
	fs.StringVar(&o.ReleaseImage, "release-image", "", "The release payload pull spec (required).")
	fs.StringVar(&o.PullSecretFile, "pull-secret", "", "A file with the registry credentials (.dockerconfigjson) (required).")
	fs.StringVar(&o.AvailabilityPolicy, "control-plane-availability-policy", string(hyperv1.SingleReplica), "SingleReplica or HighlyAvailable.")
	fs.StringVar(&o.InfraID, "infra-id", "", "The infrastructure ID; generated from the name when empty.")
	fs.StringVar(&o.ClusterID, "cluster-id", "", "The cluster ID (a UUID); generated when empty.")
	fs.StringVar(&o.EtcdBackup, "restore-from-etcd-backup", "", "Start the cluster's etcd from the snapshot of this complete EtcdBackup (in --namespace) instead of empty: nothing is created until it was found and checked.")
	fs.BoolVar(&o.Render, "render", false, "Print the objects as YAML instead of creating them (without the pull secret unless --render-sensitive).")
	fs.BoolVar(&o.RenderSensitive, "render-sensitive", false, "With --render, print the pull secret too.")
	fs.StringVar(&o.ExternalAPIServerAddress, "external-api-server-address", "",
		"The address (IP or DNS name) clients reach the kube-apiserver's NodePort on; by default the first node's ExternalDNS, ExternalIP or InternalIP address.")
	fs.Int32Var(&o.ExternalAPIServerPort, "external-api-server-port", 0,
		"The node port clients reach the kube-apiserver on, in the management cluster's NodePort range (30000-32767 unless its kube-apiserver sets --service-node-port-range); by default the management cluster allocates one.")
	fs.Int32Var(&o.NodePoolReplicas, "node-pool-replicas", 0, "Create NodePool NAME of this many machines ("+pools+"); none when 0.")
	fs.BoolVar(&o.Wait, "wait", false, "Wait until the HostedCluster is Available and a request with its admin kubeconfig succeeds.")
	fs.DurationVar(&o.Timeout, "timeout", 20*time.Minute, "How long --wait waits.")
	o.kube.AddFlags(fs)
	for _, flag := range []string{"release-image", "pull-secret"} {
		_ = cmd.MarkFlagRequired(flag)
	}
	return cmd
}

// Objects returns the namespace, pull secret and HostedCluster to create.
// The kube-apiserver is published on a NodePort at
// ExternalAPIServerAddress, when there is one.
func (o *CreateOptions) Objects(pullSecret []byte) []client.Object {
	infraID := o.InfraID
	if infraID == "" {
		// A DNS label, as infraID must be, from any valid name.
		infraID = strings.ReplaceAll(o.Name, ".", "-") + "-" + utilrand.String(5)
	}
	clusterID := o.ClusterID
	if clusterID == "" {
		clusterID = string(uuid.NewUUID())
	}
	secretName := o.Name + "-pull-secret"
	objects := []client.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}},
		newPullSecret(o.Namespace, secretName, pullSecret),
		&hyperv1.HostedCluster{
			TypeMeta:   metav1.TypeMeta{APIVersion: hyperv1.GroupVersion.String(), Kind: "HostedCluster"},
			ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
			Spec: hyperv1.HostedClusterSpec{
				Release:                      hyperv1.Release{Image: o.ReleaseImage},
				ControllerAvailabilityPolicy: hyperv1.AvailabilityPolicy(o.AvailabilityPolicy),
				Platform:                     hyperv1.PlatformSpec{Type: cmp.Or(o.Platform, hyperv1.NonePlatform)},
				PullSecret:                   hyperv1.LocalObjectReference{Name: secretName},
				InfraID:                      infraID,
				ClusterID:                    clusterID,
				Services:                     o.services(),
				Etcd:                         o.etcd(),
			},
		},
	}
	if pool := o.nodePool(); pool != nil {
		objects = append(objects, pool)
	}
	return objects
}

// nodePool is the NodePool --node-pool-replicas asks for, named as the
// cluster; nil when none.
func (o *CreateOptions) nodePool() *hyperv1.NodePool {
	if o.NodePoolReplicas <= 0 {
		return nil
	}
	pool := &nodepool.CreateOptions{Name: o.Name, Namespace: o.Namespace, ClusterName: o.Name, ReleaseImage: o.ReleaseImage, Replicas: o.NodePoolReplicas,
		Platform: cmp.Or(o.Platform, hyperv1.NonePlatform)}
	return pool.NodePool()
}

// etcd is the cluster's etcd: the API server's defaults, restored from
// EtcdBackup when set.
func (o *CreateOptions) etcd() hyperv1.EtcdSpec {
	spec := hyperv1.EtcdSpec{}
	if o.EtcdBackup != "" {
		spec.RestoreFrom = &hyperv1.EtcdRestoreSource{EtcdBackup: hyperv1.LocalObjectReference{Name: o.EtcdBackup}}
	}
	return spec
}

// services publishes the kube-apiserver on a NodePort at
// ExternalAPIServerAddress, as HyperShift's platform None does.
func (o *CreateOptions) services() []hyperv1.ServicePublishingStrategyMapping {
	return hyperv1.NodePortServices(o.ExternalAPIServerAddress, o.ExternalAPIServerPort)
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
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("invalid --namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		return fmt.Errorf("invalid --name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	if ns := hyperv1.ControlPlaneNamespace(o.Namespace, o.Name); len(ns) > hyperv1.MaxNamespaceLength {
		return fmt.Errorf("invalid --name %q: its control-plane namespace %s would be %d characters long, more than the %d a namespace name may have; use a name of at most %d characters in namespace %s",
			o.Name, ns, len(ns), hyperv1.MaxNamespaceLength, hyperv1.MaxNamespaceLength-1-len(o.Namespace), o.Namespace)
	}
	if o.Render && o.Wait {
		return fmt.Errorf("--render prints the objects and creates nothing: it cannot --wait")
	}
	if o.Render && o.ExternalAPIServerAddress == "" {
		return fmt.Errorf("--render needs --external-api-server-address: it reads no node of the management cluster, and a HostedCluster must publish its kube-apiserver")
	}
	if o.NodePoolReplicas < 0 {
		return fmt.Errorf("invalid --node-pool-replicas %d: use 0 for no NodePool, or the number of machines", o.NodePoolReplicas)
	}
	if o.ExternalAPIServerPort < 0 || o.ExternalAPIServerPort > 65535 {
		return fmt.Errorf("invalid --external-api-server-port %d: use a node port of the management cluster (30000-32767 on most), or leave it unset", o.ExternalAPIServerPort)
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
	if err := checkPullSecret(pullSecret); err != nil {
		return err
	}
	if o.Render {
		objects := o.Objects(pullSecret)
		if !o.RenderSensitive {
			objects = slices.DeleteFunc(objects, func(obj client.Object) bool { _, isSecret := obj.(*corev1.Secret); return isSecret })
		}
		return install.Render(out, "yaml", objects)
	}
	c, cfg, err := o.kube.Connect()
	if err != nil {
		return err
	}
	if err := o.checkConflicts(ctx, c); err != nil {
		return cli.Explain(cfg.Host, err)
	}
	if o.ExternalAPIServerAddress == "" {
		if o.ExternalAPIServerAddress, err = nodeAddress(ctx, c, out); err != nil {
			return cli.Explain(cfg.Host, err)
		}
	}
	objects := o.Objects(pullSecret)
	namespace, secret, hc := objects[0].(*corev1.Namespace), objects[1].(*corev1.Secret), objects[2].(*hyperv1.HostedCluster)
	// The API server judges the HostedCluster before anything is created,
	// so that a refused one leaves nothing behind.
	if err := o.dryRun(ctx, c, namespace, hc, out); err != nil {
		return cli.Explain(cfg.Host, err)
	}
	change, err := planPullSecret(ctx, c, secret)
	if err == nil {
		err = change.apply(ctx, c, out)
	}
	if err != nil {
		return cli.Explain(cfg.Host, err)
	}
	if err := c.Create(ctx, hc); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return alreadyExists(hc)
		}
		return cli.Explain(cfg.Host, fmt.Errorf("failed to create HostedCluster %s: %w", key(hc), err))
	}
	_, _ = fmt.Fprintf(out, "HostedCluster %s created\n", key(hc))
	if pool := o.nodePool(); pool != nil {
		if err := c.Create(ctx, pool); err != nil {
			return cli.Explain(cfg.Host, fmt.Errorf("HostedCluster %s was created, but the API server refused its NodePool %s/%s: %w; create it with hypershift create nodepool %s %s --cluster-name=%s -n %s --replicas=%d",
				key(hc), pool.Namespace, pool.Name, err, strings.ToLower(string(pool.Spec.Platform.Type)), pool.Name, o.Name, o.Namespace, o.NodePoolReplicas))
		}
		if pool.Spec.Platform.Type == hyperv1.PodPlatform {
			_, _ = fmt.Fprintf(out, "NodePool %s/%s created (%d machines); the management cluster runs them once the control plane is up\n", pool.Namespace, pool.Name, o.NodePoolReplicas)
		} else {
			_, _ = fmt.Fprintf(out, "NodePool %s/%s created (%d machines); they join with what Secret %s/%s holds once the control plane is up\n",
				pool.Namespace, pool.Name, o.NodePoolReplicas, pool.Namespace, hyperv1.NodePoolJoinSecretName(pool.Name))
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

// dryRun has the API server judge the HostedCluster (schema, CEL rules,
// admission policies) with a server-side dry run, and refuses one that
// already exists. The HostedCluster's namespace must exist for that: when
// it does not, it is created first, and deleted again if the HostedCluster
// is refused.
func (o *CreateOptions) dryRun(ctx context.Context, c client.Client, namespace *corev1.Namespace, hc *hyperv1.HostedCluster, out io.Writer) error {
	created := false
	switch err := c.Create(ctx, namespace); {
	case err == nil:
		created = true
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("failed to create namespace %s: %w", namespace.Name, err)
	}
	err := c.Create(ctx, hc.DeepCopy(), client.DryRunAll)
	if err == nil {
		err = o.dryRunNodePort(ctx, c)
	}
	var refused *nodePortError
	switch {
	case errors.As(err, &refused):
	case err == nil:
		if created {
			_, _ = fmt.Fprintf(out, "Namespace %s created\n", namespace.Name)
		}
		return nil
	case apierrors.IsAlreadyExists(err):
		err = alreadyExists(hc)
	default:
		err = fmt.Errorf("the API server refused HostedCluster %s: %w", key(hc), err)
	}
	if created {
		// Only the namespace this run created, as it created it.
		uid := namespace.UID
		if delErr := c.Delete(ctx, namespace, client.Preconditions{UID: &uid}); delErr != nil && !apierrors.IsNotFound(delErr) {
			return errors.Join(err, fmt.Errorf("failed to delete namespace %s, created for it: %w", namespace.Name, delErr))
		}
	}
	return err
}

// dryRunNodePort has the API server judge the kube-apiserver's node port,
// when one is asked for, with a server-side dry run of a NodePort Service
// in the HostedCluster's namespace: one that another Service holds is
// refused. (A dry run does not check the port against the management
// cluster's range; the control-plane-operator reports that refusal, and
// --wait ends at once on it.)
func (o *CreateOptions) dryRunNodePort(ctx context.Context, c client.Client) error {
	if o.ExternalAPIServerPort == 0 {
		return nil
	}
	probe := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, GenerateName: "node-port-check-"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{
			Name: "https", Port: 6443, NodePort: o.ExternalAPIServerPort, Protocol: corev1.ProtocolTCP,
		}}},
	}
	err := c.Create(ctx, probe, client.DryRunAll)
	var status apierrors.APIStatus
	switch {
	case err == nil, apierrors.IsForbidden(err):
		// What the user may not create is left to the operator.
		return nil
	case apierrors.IsInvalid(err) && errors.As(err, &status):
		var causes []string
		if details := status.Status().Details; details != nil {
			for _, cause := range details.Causes {
				causes = append(causes, cause.Message)
			}
		}
		return &nodePortError{message: fmt.Sprintf("--external-api-server-port %d cannot be used: the management cluster's API server refused a Service on it (%s); choose another port, or leave it unset",
			o.ExternalAPIServerPort, strings.Join(causes, "; "))}
	}
	return fmt.Errorf("failed to check node port %d with a server-side dry run: %w", o.ExternalAPIServerPort, err)
}

// nodePortError is a node port the API server refused.
type nodePortError struct{ message string }

func (e *nodePortError) Error() string { return e.message }

// checkConflicts refuses, before anything is created, a cluster whose
// control-plane namespace belongs to another HostedCluster or exists
// without belonging to one, or that asks for the node port of another
// HostedCluster: the hypershift-operator would refuse it with the same
// message. What the user may not read is left to the operator.
func (o *CreateOptions) checkConflicts(ctx context.Context, c client.Client) error {
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
			if other == cluster {
				continue
			}
			if hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name) == name {
				return errors.New(hyperv1.ControlPlaneNamespaceConflictMessage(cluster, name, other))
			}
			if port := o.ExternalAPIServerPort; port != 0 && hyperv1.APIServerNodePort(hc.Spec.Services) == port {
				return errors.New(hyperv1.NodePortConflictMessage(port, other) + " (--external-api-server-port)")
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

// alreadyExists is the error for a HostedCluster of that name that exists.
func alreadyExists(hc *hyperv1.HostedCluster) error {
	return fmt.Errorf("HostedCluster %s already exists: change its release image or pull secret with hypershift update cluster %s -n %s, or pick another name",
		key(hc), hc.Name, hc.Namespace)
}
