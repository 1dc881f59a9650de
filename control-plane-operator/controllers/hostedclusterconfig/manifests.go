package hostedclusterconfig

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
)

// managedByLabel marks what the control-plane-operator manages in the
// hosted cluster, so that a user (or a later version) can tell it apart.
const managedByLabel = "hypershift.openshift.io/managed-by"

// Objects are what the hosted cluster is given, in the order they are
// applied: the RBAC of node bootstrap, as kubeadm's: a bootstrap token of
// group hyperv1.NodeBootstrapGroup may ask for a kubelet client
// certificate, which kube-controller-manager approves and signs; a node
// may renew its own; and kube-apiserver may use the kubelets' API (logs,
// exec, port-forward) and nothing else.
func Objects() []client.Object {
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: name}
	}
	user := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: pki.KubeletClientUser}
	return []client.Object{
		binding("hypershift:node-bootstrapper", "system:node-bootstrapper", group(hyperv1.NodeBootstrapGroup)),
		binding("hypershift:approve-node-client-csr", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", group(hyperv1.NodeBootstrapGroup)),
		binding("hypershift:approve-node-client-renewal", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", group("system:nodes")),
		binding("hypershift:kube-apiserver-kubelet-client", "system:kubelet-api-admin", user),
	}
}

// ClusterAPIObjects are what the cluster-api manager may do in the hosted
// cluster of a control plane whose NodePools' machines it runs (platform
// Pod): find a machine's Node (by providerID) and watch it, label, cordon
// and delete it, and drain it: list its Pods, evict them, tell DaemonSet
// Pods (which it leaves) and namespaces, and wait for volumes to detach.
// Its health probe reads the API's root.
func ClusterAPIObjects() []client.Object {
	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: "hypershift:cluster-api", Labels: map[string]string{managedByLabel: FieldOwner}},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch", "update", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"pods", "namespaces"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
			{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get"}},
			{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"volumeattachments"}, Verbs: []string{"get", "list", "watch"}},
			{NonResourceURLs: []string{"/"}, Verbs: []string{"get"}},
		},
	}
	return []client.Object{
		role,
		binding(role.Name, role.Name, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: pki.ClusterAPIUser}),
	}
}

// binding binds the ClusterRole role to subject, cluster-wide.
func binding(name, role string, subject rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{managedByLabel: FieldOwner}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
}
