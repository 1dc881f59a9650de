// Package rbac defines, in one place, every permission the hypershift-operator
// holds and every permission it grants to a control-plane-operator. The HO's
// ClusterRole includes every rule it puts into a CPO Role: Kubernetes lets a
// subject grant only what it holds itself.
package rbac

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
	"github.com/hypershift-le/hypershift/support/controlplanekinds"
	"github.com/hypershift-le/hypershift/support/metricsserving"
)

// HypershiftOperatorName names the HO's ServiceAccount, ClusterRole,
// ClusterRoleBinding, leader-election Role and RoleBinding, and Deployment.
const HypershiftOperatorName = "hypershift-operator"

var (
	// readWrite is what server-side apply (get, create, patch, and a
	// watch through the cache) and a delete need: neither operator sends
	// an update but for status and for its Lease.
	readWrite = []string{"get", "list", "watch", "create", "patch", "delete"}
	read      = []string{"get", "list", "watch"}
	// applied is readWrite without delete, for what goes only with its
	// namespace.
	applied = []string{"get", "list", "watch", "create", "patch"}
)

// ControlPlaneOperatorRules are the permissions of a control-plane-operator in
// its control-plane namespace: its Lease (create cannot be limited by name;
// get, update, and list and watch with a metadata.name field selector are),
// each kind of controlplanekinds.All with its verbs (the hosted control
// plane's Deployments, StatefulSet, PodDisruptionBudgets and Services; its
// Secrets: its PKI, and the pull secret the HO copies next to it, read;
// reading its claims), its HostedControlPlane (a finalizer, patched) and
// that object's status, and events.
func ControlPlaneOperatorRules() []rbacv1.PolicyRule {
	return slices.Clone(controlPlaneOperatorRules)
}

// PodPlatformControlPlaneOperatorRules are what a control-plane-operator of
// platform Pod holds beyond ControlPlaneOperatorRules: it runs the NodePools'
// machines (package podmachine): their Pods (made and deleted, never
// updated), the PodMachines (finalizer and providerID patched, status) and
// the PodCluster (status), reading the Machines that own them.
func PodPlatformControlPlaneOperatorRules() []rbacv1.PolicyRule {
	return append(ControlPlaneOperatorRules(),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{infrav1.GroupVersion.Group}, Resources: []string{"podmachines", "podclusters"}, Verbs: []string{"get", "list", "watch", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{infrav1.GroupVersion.Group}, Resources: []string{"podmachines/status", "podclusters/status"}, Verbs: []string{"update"}},
		rbacv1.PolicyRule{APIGroups: []string{clusterv1.GroupVersion.Group}, Resources: []string{"machines"}, Verbs: read},
	)
}

// ClusterAPIRules are the permissions of a HostedCluster's cluster-api
// manager (platform Pod) in its control-plane namespace: cluster-api's own
// kinds, the infrastructure kinds it clones and owns, the
// HostedControlPlane it references as its Cluster's control plane (owner
// references and labels; deleted with the Cluster), the Secrets of the
// hosted cluster's kubeconfig and of the machines' bootstrap data and the
// ConfigMaps (read), events, and its Lease (by name, but create).
func ClusterAPIRules() []rbacv1.PolicyRule {
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{clusterv1.GroupVersion.Group, "addons.cluster.x-k8s.io"}, Resources: []string{"*"}, Verbs: all},
		{APIGroups: []string{infrav1.GroupVersion.Group}, Resources: []string{"podclusters", "podmachines", "podmachinetemplates"}, Verbs: all},
		{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"hostedcontrolplanes"}, Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}},
		// ConfigMaps' metadata is watched by its ClusterResourceSet
		// controller, which nothing here uses but which always runs.
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: read},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "update"}, ResourceNames: []string{hyperv1.ClusterAPILeaseName}},
	}
}

// controlPlaneOperatorRules are ControlPlaneOperatorRules: a copy goes out.
var controlPlaneOperatorRules = slices.Concat(
	[]rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "update"}, ResourceNames: []string{hyperv1.ControlPlaneOperatorLeaseName}},
	},
	kindRules(controlplanekinds.All),
	[]rbacv1.PolicyRule{
		{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"hostedcontrolplanes"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"hostedcontrolplanes/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	},
)

// kindRules grant each kind its verbs, in order: one rule for each run of
// kinds of one group with the same verbs.
func kindRules(kinds []controlplanekinds.Kind) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, kind := range kinds {
		verbs := kind.Verbs()
		if n := len(rules); n > 0 && rules[n-1].APIGroups[0] == kind.GVK.Group && slices.Equal(rules[n-1].Verbs, verbs) {
			rules[n-1].Resources = append(rules[n-1].Resources, kind.Resource)
			continue
		}
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{kind.GVK.Group}, Resources: []string{kind.Resource}, Verbs: verbs})
	}
	return rules
}

// HypershiftOperatorRules are the HO's cluster-wide permissions: what it
// reconciles and creates, plus every rule of ControlPlaneOperatorRules (a
// Role can only grant what its creator holds).
func HypershiftOperatorRules() []rbacv1.PolicyRule {
	own := []rbacv1.PolicyRule{
		// Its finalizer is patched in and out; neither operator sets owner
		// references, so neither needs the finalizers subresource.
		{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"hostedclusters"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"hostedclusters/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"hostedcontrolplanes"}, Verbs: readWrite},
		// NodePools as HostedClusters, and deleted with their cluster (before
		// its control plane); their join Secrets are owned by them
		// without blocking their deletion, so no finalizers subresource.
		{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"nodepools"}, Verbs: []string{"get", "list", "watch", "patch", "delete"}},
		// A pool's status is patched: passes woken by its machines' changes
		// read a cached copy that may lag the last write.
		{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"nodepools/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: readWrite},
		// Secrets are read one by one past the cache; list and watch serve
		// the label-selected watch of the pull-secret copies (RBAC cannot
		// narrow them to a label, and get on every Secret is held already).
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: readWrite},
		// The CPO's ServiceAccount, Role and RoleBinding go with their
		// namespace.
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: applied},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: applied},
		// The fencing policies (patched by name: never
		// ClusterRoleBindingPolicyName, which confines this ClusterRole and
		// which no admission policy can protect) and their bindings: the
		// shared ones, and those of one namespace each that earlier
		// versions applied and this one deletes (which RBAC cannot narrow).
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies"}, Verbs: []string{"get", "list", "watch", "create"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies"}, Verbs: []string{"patch"}, ResourceNames: FencingPolicyNames},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicybindings"}, Verbs: readWrite},
		// Watch every control-plane-operator Lease to show its holder, and
		// release one whose holder's pod is gone (the lease arbiter: it only
		// updates, never deletes, the CPO Lease).
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: read},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"update"}, ResourceNames: []string{hyperv1.ControlPlaneOperatorLeaseName}},
		// Judge whether a Lease's holder still runs: the metadata of the
		// control-plane-operator pods (a label-selected watch, which RBAC
		// cannot narrow), and the holder's pod read one by one.
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
		// Observe the fence: dry-run writes as a control-plane-operator pod
		// (its ServiceAccount, and a pod name in the token's extra).
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}, ResourceNames: []string{hyperv1.ControlPlaneOperatorName}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"userextras/authentication.kubernetes.io/pod-name"}, Verbs: []string{"impersonate"}},
		// Authenticate and authorize who scrapes its metrics (HTTPS,
		// controller-runtime's WithAuthenticationAndAuthorization).
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		// Every CPO authorizes its scrapers too, through a
		// ClusterRoleBinding of AuthDelegatorClusterRole per control-plane
		// namespace: applied, watched by label (which RBAC cannot narrow),
		// deleted with the cluster; bind on that one ClusterRole grants it
		// whatever the role holds. ClusterRoleBindingPolicy refuses every
		// other binding, a delete included.
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{AuthDelegatorClusterRole, ClusterAPIClusterRole}},
		// With --enable-monitoring, a ServiceMonitor per control-plane
		// namespace (read by name, never listed). The ClusterRole is the
		// same whether or not the flag is on.
		{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"servicemonitors"}, Verbs: []string{"get", "create", "patch", "delete"}},
		// Platform Pod: the machine image cache (render.MachineImageCache),
		// one per control-plane namespace, watched by name; it goes with its
		// namespace.
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: applied},
		// EtcdBackups: a finalizer patched in and out (their Jobs and
		// Secrets beside them are owned without blocking deletion), a
		// patched status; two Jobs per backup (one in the control-plane
		// namespace, one beside the claim), watched by label (which RBAC
		// cannot narrow), deleted when the backup ends; the claim read by
		// name to say when it is missing.
		{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"etcdbackups"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"etcdbackups/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get"}},
		// With --management-cluster-networks, two NetworkPolicies per
		// control-plane namespace (render.NetworkPolicies), watched by
		// label, deleted when the flag is gone.
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: readWrite},
	}
	own = append(own, PodPlatformControlPlaneOperatorRules()...)
	return append(own, ClusterAPIRules()...)
}

// FencingPolicyNames are the ValidatingAdmissionPolicies the operator
// applies (render.FencingPolicy, render.ClusterAPIFencingPolicy,
// render.LeaseGuardPolicy, render.KeepAlivePolicy,
// render.OperatorFencingPolicy and render.OperatorObjectFencingPolicy),
// the only ones it may patch.
var FencingPolicyNames = []string{
	"control-plane-operator-fencing.hypershift.openshift.io",
	"cluster-api-fencing.hypershift.openshift.io",
	"control-plane-operator-lease-guard.hypershift.openshift.io",
	"lease-param-keepalive.hypershift.openshift.io",
	"hypershift-operator-shard-fencing.hypershift.openshift.io",
	"hypershift-operator-shard-object-fencing.hypershift.openshift.io",
}

// ClusterAPIClusterRole is the ClusterRole `hypershift install` creates for
// the cluster-api managers of HostedClusters of platform Pod: reading CRDs,
// by which cluster-api learns which contract a referenced kind keeps. Each
// manager gets it through a binding of its control-plane namespace
// (ClusterAPIBindingPrefix).
const ClusterAPIClusterRole = "hypershift-cluster-api"

// ClusterAPIRole is ClusterAPIClusterRole.
func ClusterAPIRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: ClusterAPIClusterRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: read},
		},
	}
}

// AuthDelegatorClusterRole is the built-in ClusterRole that allows
// creating TokenReviews and SubjectAccessReviews, which a
// control-plane-operator needs to authorize who scrapes its metrics.
const AuthDelegatorClusterRole = "system:auth-delegator"

// ClusterRole is the HO's ClusterRole.
func ClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: HypershiftOperatorName},
		Rules:      HypershiftOperatorRules(),
	}
}

// MetricsReaderName names the ClusterRole that lets a scraper (Prometheus's
// ServiceAccount, say, through a ClusterRoleBinding) read the metrics of
// the hypershift-operator and of every control-plane-operator.
const MetricsReaderName = metricsserving.ReaderClusterRole

// MetricsReaderClusterRole allows GET /metrics, which the operators'
// metrics endpoints authorize (metricsserving.Options.Secure).
func MetricsReaderClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: MetricsReaderName},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
}

// LeaderElectionRules are the HO's permissions on its own Lease, granted by
// a Role in the HO's namespace. With more than one shard (--shards) they
// cover every Lease of that namespace, which holds only the HO's: a shard
// Lease per shard and a member Lease per replica, named after its pod
// (leaderelection.AddShards), which a name in a rule cannot foresee; the
// member Leases of replicas long gone are deleted.
func LeaderElectionRules(shards int) []rbacv1.PolicyRule {
	leases := rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "update"}, ResourceNames: []string{hyperv1.HypershiftOperatorLeaseName}}
	if shards > 1 {
		leases = rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "update", "delete"}}
	}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		leases,
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// LeaderElectionRole is the Role, in the HO's namespace, for its own Lease,
// and its shards' when shards > 1.
func LeaderElectionRole(namespace string, shards int) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: HypershiftOperatorName + "-leader-election"},
		Rules:      LeaderElectionRules(shards),
	}
}
