// Package nodepool is the hypershift-operator's NodePool controller. For
// each NodePool it checks the HostedCluster the pool joins, keeps the
// pool's bootstrap token in the control-plane namespace (the
// control-plane-operator installs it in the hosted cluster), rotating it
// with an overlap so that a machine in the middle of joining is not cut
// off, and, for platform None, publishes beside the NodePool what the
// user's machines join with: the bootstrap kubeconfig and the hosted
// cluster's CA.
package nodepool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/support/backoff"
	"github.com/hypershift-le/hypershift/support/conditions"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// FieldOwner is the field manager of the controller's applies.
const FieldOwner = "hypershift-operator"

// TokenTTL is how long a bootstrap token joins machines. A new one is
// issued once half of it has passed; the old one keeps working until it
// expires (the hosted kube-controller-manager's token cleaner then deletes
// it), so a machine that read it just before the rotation still joins.
const TokenTTL = 24 * time.Hour

// Reasons of the NodePool's conditions: hyperv1's, kept here for those
// that name them from this package.
const (
	HostedClusterNotFoundReason  = hyperv1.HostedClusterNotFoundReason
	WaitingForControlPlaneReason = hyperv1.WaitingForControlPlaneReason
	InvalidNetworkReason         = hyperv1.InvalidNetworkReason
)

// MaxConcurrentReconciles is how many NodePools are reconciled at once.
const MaxConcurrentReconciles = 4

// Reconciler reconciles NodePools.
type Reconciler struct {
	Client client.Client
	// APIReader reads the HostedClusters' pull secrets, past the cache.
	APIReader client.Reader
	// Releases reads the pools' release payloads.
	Releases releaseinfo.Provider
	// InsecureRegistries are the registry hosts Releases reaches over
	// plain HTTP: the machines of platform Pod pull from them too.
	InsecureRegistries []string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Shard, when a part, limits the controller to the NodePools of the
	// HostedClusters of that shard (leaderelection.AddShards).
	Shard leaderelection.Shard
	// OperatorShard, when the shards are fenced, is the shard's
	// OperatorShardLabel value, which the NodePools carry for its fence
	// (render.SetOperatorShard); "" otherwise.
	OperatorShard string

	// hosted are clients of the hosted clusters, which the pools' nodes
	// are counted in.
	hosted hostedClients
	// verdicts are the releases read for the pools.
	verdicts keyed[releaseVerdict]
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager watches NodePools, and the HostedClusters they join
// (a cluster created after its pool, a kubeconfig published).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Shard.Name("nodepool")).
		// A pass may wait on a hosted API server that hangs (up to its
		// request timeout): pools of other clusters go on meanwhile.
		WithOptions(controller.Options{MaxConcurrentReconciles: MaxConcurrentReconciles, RateLimiter: backoff.FailureRateLimiter(), NewQueue: r.Shard.NewQueue(r.shardKey)}).
		// A failed pass is retried within backoff.MaxFailureDelay, so a pool
		// catches up soon after an outage of either API server.
		For(&hyperv1.NodePool{}).
		Watches(&hyperv1.HostedCluster{}, handler.EnqueueRequestsFromMapFunc(r.poolsOf)).
		// A pool of platform Pod follows its machines' rollout.
		Watches(&clusterv1.MachineDeployment{}, handler.EnqueueRequestsFromMapFunc(poolOfMachineDeployment)).
		Complete(r)
}

// shardKey is the shard key of a NodePool request: its HostedCluster's,
// from the pool in the manager's cache (spec.clusterName is immutable).
func (r *Reconciler) shardKey(ctx context.Context, req reconcile.Request) (string, bool) {
	np := &hyperv1.NodePool{}
	if err := r.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return "", false
	}
	return hyperv1.HostedClusterShardKey(np.Namespace, np.Spec.ClusterName), true
}

// poolOfMachineDeployment maps a pool's MachineDeployment (named as the
// pool, its cluster annotation naming the pool's namespace) to the pool.
func poolOfMachineDeployment(_ context.Context, obj client.Object) []reconcile.Request {
	cluster, ok := obj.GetAnnotations()[hyperv1.ClusterAnnotation]
	namespace, _, found := strings.Cut(cluster, "/")
	if !ok || !found || obj.GetLabels()[hyperv1.NodePoolLabel] != obj.GetName() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: namespace, Name: obj.GetName()}}}
}

// poolsOf maps a HostedCluster to the NodePools that name it.
func (r *Reconciler) poolsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	pools := &hyperv1.NodePoolList{}
	if err := r.Client.List(ctx, pools, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, np := range pools.Items {
		if np.Spec.ClusterName == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: np.Namespace, Name: np.Name}})
		}
	}
	return out
}

// Reconcile brings one NodePool's token and join material in line.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	np := &hyperv1.NodePool{}
	if err := r.Client.Get(ctx, req.NamespacedName, np); err != nil {
		if apierrors.IsNotFound(err) {
			r.verdicts.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Shard.Has(hyperv1.HostedClusterShardKey(np.Namespace, np.Spec.ClusterName)) {
		return ctrl.Result{}, nil // let in while not in the cache: another shard's
	}
	cpNamespace := hyperv1.ControlPlaneNamespace(np.Namespace, np.Spec.ClusterName)
	original := np.DeepCopy()
	var result ctrl.Result
	var err error
	switch {
	case !np.DeletionTimestamp.IsZero():
		if result, err = r.reconcileDelete(ctx, np, cpNamespace); err == nil && !controllerutil.ContainsFinalizer(np, hyperv1.Finalizer) {
			return result, nil // gone
		}
	default:
		if !controllerutil.ContainsFinalizer(np, hyperv1.Finalizer) || render.OperatorShardDiffers(np, r.OperatorShard) {
			patch := client.MergeFromWithOptions(np.DeepCopy(), client.MergeFromWithOptimisticLock{})
			controllerutil.AddFinalizer(np, hyperv1.Finalizer)
			render.SetOperatorShard(np, r.OperatorShard)
			if err := r.Client.Patch(ctx, np, patch); err != nil {
				return ctrl.Result{}, fmt.Errorf("failed to add the finalizer: %w", err)
			}
			original = np.DeepCopy()
		}
		result, err = r.reconcileNormal(ctx, np, cpNamespace)
	}
	np.Status.ObservedGeneration = np.Generation
	if !equality.Semantic.DeepEqual(original.Status, np.Status) {
		// A patch of the status this controller alone writes: a pass
		// that read a copy the cache has not caught up with yet does
		// not conflict with the pass that wrote it.
		if statusErr := r.Client.Status().Patch(ctx, np, client.MergeFrom(original)); statusErr != nil && !apierrors.IsNotFound(statusErr) {
			err = errors.Join(err, fmt.Errorf("failed to update the status: %w", statusErr))
		}
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return result, nil
}

func (r *Reconciler) reconcileNormal(ctx context.Context, np *hyperv1.NodePool, cpNamespace string) (ctrl.Result, error) {
	set := func(conditionType string, status metav1.ConditionStatus, reason, message string) {
		conditions.Set(&np.Status.Conditions, np.Generation, conditionType, status, reason, message)
	}
	set(hyperv1.AutoscalingEnabled, metav1.ConditionFalse, hyperv1.AsExpectedReason, "Autoscaling is not supported: spec.replicas sets the size")
	hc := &hyperv1.HostedCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: np.Namespace, Name: np.Spec.ClusterName}, hc); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		r.hosted.forget(types.NamespacedName{Namespace: np.Namespace, Name: np.Spec.ClusterName})
		message := fmt.Sprintf("HostedCluster %s/%s does not exist: create it (hypershift create cluster none %s -n %s), or create the NodePool for an existing cluster",
			np.Namespace, np.Spec.ClusterName, np.Spec.ClusterName, np.Namespace)
		set(hyperv1.ValidHostedCluster, metav1.ConditionFalse, hyperv1.HostedClusterNotFoundReason, message)
		set(hyperv1.Ready, metav1.ConditionFalse, hyperv1.HostedClusterNotFoundReason, message)
		return ctrl.Result{}, nil
	}
	set(hyperv1.ValidHostedCluster, metav1.ConditionTrue, hyperv1.AsExpectedReason, "HostedCluster "+hc.Namespace+"/"+hc.Name+" exists")
	if !checkPlatform(np, hc, set) {
		return ctrl.Result{}, nil // a new HostedCluster (of the name) starts the next pass
	}
	release, err := r.checkRelease(ctx, np, hc, set)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !release.valid {
		// Nothing is published for a release the pool cannot run: what a
		// machine already has stays, and the pool says why it is not Ready.
		for _, t := range []string{hyperv1.ValidReleaseImage, hyperv1.SupportedVersionSkew} {
			if c := meta.FindStatusCondition(np.Status.Conditions, t); c != nil && c.Status != metav1.ConditionTrue {
				set(hyperv1.Ready, metav1.ConditionFalse, c.Reason, c.Message)
				break
			}
		}
		return ctrl.Result{}, nil // a new spec, or the cluster's next change, starts the next pass
	}
	if np.Spec.Platform.Type != hyperv1.PodPlatform {
		// The user's machines run the release once they join with it.
		np.Status.Version = release.version
	}

	waiting := func(message string) (ctrl.Result, error) {
		set(hyperv1.Ready, metav1.ConditionFalse, hyperv1.WaitingForControlPlaneReason, message)
		return ctrl.Result{}, nil // the HostedCluster's next change starts the next pass
	}
	if !hc.DeletionTimestamp.IsZero() {
		r.hosted.forget(types.NamespacedName{Namespace: hc.Namespace, Name: hc.Name})
		return waiting("HostedCluster " + hc.Name + " is being deleted")
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: cpNamespace}, ns); apierrors.IsNotFound(err) {
		return waiting("The control-plane namespace " + cpNamespace + " does not exist yet")
	} else if err != nil {
		return ctrl.Result{}, err
	}
	kubelet, err := kubeletConfig(hc)
	if err != nil {
		set(hyperv1.Ready, metav1.ConditionFalse, hyperv1.InvalidNetworkReason, "The pool's kubelet configuration cannot be made: "+err.Error())
		return ctrl.Result{}, nil // the HostedCluster's next change starts the next pass
	}
	token, renewAt, err := r.reconcileToken(ctx, np, cpNamespace, configHash(np, kubelet))
	if err != nil {
		return ctrl.Result{}, err
	}
	result := ctrl.Result{RequeueAfter: max(renewAt.Sub(r.now()), time.Second)}
	server, ca, kubeconfig, err := r.endpoint(ctx, hc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if server == "" {
		return waiting("The hosted control plane has not published its endpoint and CA yet (no admin kubeconfig)")
	}
	join, err := joinMaterial(np, server, ca, token, kubelet)
	if err != nil {
		return ctrl.Result{}, err
	}
	if np.Spec.Platform.Type == hyperv1.PodPlatform {
		in := machineInputs{
			pool: np, cluster: hc.Name, join: join, configHash: configHash(np, kubelet),
			machineImage: release.images[MachineImageTag], sandboxImage: release.images[SandboxImageTag], insecureRegistries: r.InsecureRegistries,
		}
		if err := r.reconcileMachines(ctx, np, in, release, set); err != nil {
			return ctrl.Result{}, err
		}
	} else if err := r.publishJoin(ctx, np, join); err != nil {
		return ctrl.Result{}, err
	}
	poll, err := r.reconcileNodes(ctx, np, hc, kubeconfig, set)
	result.RequeueAfter = min(result.RequeueAfter, poll)
	return result, err
}

// configHash names what a machine of the pool is given to run: its
// release and the kubelet's configuration. A token is for one config.
func configHash(np *hyperv1.NodePool, kubelet []byte) string {
	h := sha256.New()
	h.Write([]byte(np.Spec.Release.Image))
	h.Write([]byte{0})
	h.Write(kubelet)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// reconcileToken returns the pool's current token (id.secret), issuing a
// new one when there is none, half its life has passed, or the pool's
// config changed (the control-plane-operator then revokes the earlier one:
// no machine joins with the old config), and when the next rotation is due.
func (r *Reconciler) reconcileToken(ctx context.Context, np *hyperv1.NodePool, cpNamespace, config string) (string, time.Time, error) {
	key := client.ObjectKey{Namespace: cpNamespace, Name: hyperv1.NodePoolTokenSecretName(np.Name)}
	live := &corev1.Secret{}
	err := r.Client.Get(ctx, key, live)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", time.Time{}, err
	}
	if err == nil {
		expires, parseErr := time.Parse(time.RFC3339, string(live.Data[bootstrapapi.BootstrapTokenExpirationKey]))
		sameConfig := live.Annotations[hyperv1.NodePoolConfigAnnotation] == config
		if renewAt := expires.Add(-TokenTTL / 2); parseErr == nil && r.now().Before(renewAt) && sameConfig {
			return bootstraputil.TokenFromIDAndSecret(string(live.Data[bootstrapapi.BootstrapTokenIDKey]), string(live.Data[bootstrapapi.BootstrapTokenSecretKey])), renewAt, nil
		}
	}
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return "", time.Time{}, err
	}
	id, secret, _ := strings.Cut(token, ".")
	expires := r.now().Add(TokenTTL).UTC().Truncate(time.Second)
	desired := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name,
			Labels:      map[string]string{hyperv1.NodePoolLabel: np.Name, hyperv1.ControlPlaneComponentLabel: hyperv1.NodePoolTokenComponent},
			Annotations: map[string]string{hyperv1.ClusterAnnotation: np.Namespace + "/" + np.Spec.ClusterName, hyperv1.NodePoolConfigAnnotation: config},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey: []byte(id), bootstrapapi.BootstrapTokenSecretKey: []byte(secret),
			bootstrapapi.BootstrapTokenExpirationKey: []byte(expires.Format(time.RFC3339)),
		},
	}
	if _, err := (apply.Applier{Client: r.Client, FieldOwner: FieldOwner}).Apply(ctx, desired); err != nil {
		return "", time.Time{}, fmt.Errorf("failed to issue the bootstrap token of NodePool %s/%s: %w", np.Namespace, np.Name, err)
	}
	return token, expires.Add(-TokenTTL / 2), nil
}

// endpoint is the hosted kube-apiserver's URL and CA, from the admin
// kubeconfig the hypershift-operator copies beside the HostedCluster, and
// that kubeconfig; "" while there is none.
func (r *Reconciler) endpoint(ctx context.Context, hc *hyperv1.HostedCluster) (string, []byte, []byte, error) {
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: hyperv1.AdminKubeconfigName(hc.Name)}, secret); apierrors.IsNotFound(err) {
		return "", nil, nil, nil
	} else if err != nil {
		return "", nil, nil, err
	}
	raw := secret.Data[hyperv1.KubeconfigKey]
	config, err := clientcmd.Load(raw)
	if err != nil {
		return "", nil, nil, fmt.Errorf("the admin kubeconfig of HostedCluster %s/%s does not load: %w", hc.Namespace, hc.Name, err)
	}
	context := config.Contexts[config.CurrentContext]
	if context == nil || config.Clusters[context.Cluster] == nil {
		return "", nil, nil, fmt.Errorf("the admin kubeconfig of HostedCluster %s/%s has no current cluster", hc.Namespace, hc.Name)
	}
	cluster := config.Clusters[context.Cluster]
	return cluster.Server, cluster.CertificateAuthorityData, raw, nil
}

// joinMaterial is what a machine of the pool joins with: the bootstrap
// kubeconfig (the hosted kube-apiserver's URL and CA, the pool's token),
// the CA, and the hosted cluster's part of the kubelet's configuration.
func joinMaterial(np *hyperv1.NodePool, server string, ca []byte, token string, kubelet []byte) (map[string][]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[np.Spec.ClusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos["kubelet-bootstrap"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["kubelet-bootstrap"] = &clientcmdapi.Context{Cluster: np.Spec.ClusterName, AuthInfo: "kubelet-bootstrap"}
	kc.CurrentContext = "kubelet-bootstrap"
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{hyperv1.BootstrapKubeconfigKey: raw, hyperv1.CACertKey: ca, hyperv1.KubeletConfigKey: kubelet}, nil
}

// publishJoin applies the pool's join Secret (platform None), owned by the
// NodePool: it goes with it.
func (r *Reconciler) publishJoin(ctx context.Context, np *hyperv1.NodePool, join map[string][]byte) error {
	desired := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: np.Namespace, Name: hyperv1.NodePoolJoinSecretName(np.Name),
			Labels: map[string]string{hyperv1.NodePoolLabel: np.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: hyperv1.GroupVersion.String(), Kind: "NodePool", Name: np.Name, UID: np.UID,
				Controller: ptr.To(true),
			}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: join,
	}
	if _, err := (apply.Applier{Client: r.Client, FieldOwner: FieldOwner}).Apply(ctx, desired); err != nil {
		return fmt.Errorf("failed to publish the join Secret of NodePool %s/%s: %w", np.Namespace, np.Name, err)
	}
	return nil
}

// reconcileDelete deletes the pool's token (the control-plane-operator then
// removes it from the hosted cluster; no machine joins with it again) and
// lets the NodePool go; its join Secret goes with it by owner reference.
func (r *Reconciler) reconcileDelete(ctx context.Context, np *hyperv1.NodePool, cpNamespace string) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(np, hyperv1.Finalizer) {
		return ctrl.Result{}, nil
	}
	if np.Spec.Platform.Type == hyperv1.PodPlatform {
		// The machines leave first: cluster-api drains each node (unless
		// the whole cluster goes), then deletes its machine and its Node,
		// while the token still joins none after them.
		hc := &hyperv1.HostedCluster{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: np.Namespace, Name: np.Spec.ClusterName}, hc)
		if err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to get HostedCluster %s/%s: %w", np.Namespace, np.Spec.ClusterName, err)
		}
		clusterGoing := apierrors.IsNotFound(err) || !hc.DeletionTimestamp.IsZero()
		left, err := r.deleteMachines(ctx, np, cpNamespace, clusterGoing)
		if err != nil {
			return ctrl.Result{}, err
		}
		if len(left) > 0 {
			what := "drained and removed"
			if clusterGoing {
				what = "removed (not drained: their HostedCluster is being deleted)"
			}
			message := fmt.Sprintf("Deleting: waiting for %d machines to be %s: %s", len(left), what, names(left))
			conditions.Set(&np.Status.Conditions, np.Generation, hyperv1.Ready, metav1.ConditionFalse, hyperv1.NodePoolDeletingReason, message)
			return ctrl.Result{RequeueAfter: NodesPollWaiting}, nil
		}
	}
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cpNamespace, Name: hyperv1.NodePoolTokenSecretName(np.Name)}}
	if err := r.Client.Delete(ctx, token); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("failed to delete the bootstrap token of NodePool %s/%s: %w", np.Namespace, np.Name, err)
	}
	patch := client.MergeFromWithOptions(np.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(np, hyperv1.Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, np, patch))
}

// DeletingReason is hyperv1.NodePoolDeletingReason, kept here for those
// that name it from this package.
const DeletingReason = hyperv1.NodePoolDeletingReason
