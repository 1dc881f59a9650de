// The HostedClusters the hostedclusters part creates, and the objects the
// hypershift-operator is to create for each.

package main

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
)

// objectKind is one kind of object the HO creates for every HostedCluster.
type objectKind struct {
	kind string
	// resource is the audit log's name of the resource.
	resource string
	gvk      schema.GroupVersionKind
	// name is the object's fixed name, if it has one.
	name string
}

var objectKinds = []objectKind{
	{kind: "Namespace", resource: "namespaces", gvk: corev1.SchemeGroupVersion.WithKind("Namespace")},
	{kind: "HostedControlPlane", resource: "hostedcontrolplanes", gvk: hyperv1.GroupVersion.WithKind("HostedControlPlane")},
	{kind: "Secret", resource: "secrets", gvk: corev1.SchemeGroupVersion.WithKind("Secret"), name: hyperv1.PullSecretName},
	{kind: "ServiceAccount", resource: "serviceaccounts", gvk: corev1.SchemeGroupVersion.WithKind("ServiceAccount"), name: hyperv1.ControlPlaneOperatorName},
	{kind: "Role", resource: "roles", gvk: rbacv1.SchemeGroupVersion.WithKind("Role"), name: hyperv1.ControlPlaneOperatorName},
	{kind: "RoleBinding", resource: "rolebindings", gvk: rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), name: hyperv1.ControlPlaneOperatorName},
	{kind: "Deployment", resource: "deployments", gvk: appsv1.SchemeGroupVersion.WithKind("Deployment"), name: hyperv1.ControlPlaneOperatorName},
	{kind: "Lease", resource: "leases", gvk: coordinationv1.SchemeGroupVersion.WithKind("Lease"), name: hyperv1.ControlPlaneOperatorLeaseName},
	{kind: "ClusterRoleBinding", resource: "clusterrolebindings", gvk: rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding")},
}

// key is the namespace/name of the object of kind k for the HostedCluster
// name whose control-plane namespace is cp; cluster-scoped ones have an
// empty namespace.
func (k objectKind) key(cp, name string) string {
	switch k.resource {
	case "namespaces":
		return "/" + cp
	case "clusterrolebindings":
		return "/" + render.AuthDelegatorBindingName(cp)
	case "hostedcontrolplanes":
		return cp + "/" + name
	}
	return cp + "/" + k.name
}

// auditKey is the key of the object an audit event names, in the form key
// returns.
func auditKey(e auditv1.Event) string {
	ref := e.ObjectRef
	switch ref.Resource {
	case "namespaces", "clusterrolebindings":
		return ref.Resource + " /" + ref.Name
	}
	return ref.Resource + " " + ref.Namespace + "/" + ref.Name
}

// list returns the keys of every object of kind k, reading metadata only.
func (k objectKind) list(ctx context.Context, c client.Client) (map[string]bool, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
	var opts []client.ListOption
	if k.name != "" {
		opts = append(opts, client.MatchingFields{"metadata.name": k.name})
	}
	switch k.resource {
	case "namespaces":
		opts = append(opts, client.MatchingLabels{hyperv1.HostedControlPlaneLabel: "true"})
	case "clusterrolebindings":
		opts = append(opts, client.HasLabels{render.ControlPlaneNamespaceLabel})
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("failed to list %ss: %w", k.kind, err)
	}
	keys := make(map[string]bool, len(list.Items))
	for _, item := range list.Items {
		keys[item.Namespace+"/"+item.Name] = true
	}
	return keys, nil
}

// plan names the HostedClusters and their pull secrets, as `hypershift
// create cluster none` makes them, spread round-robin over the namespaces,
// and the objects the HO is to create for each.
func (r *hcRun) plan(count, namespaces int, releaseImage string, pullSecret []byte) {
	for i := range count {
		opts := cluster.CreateOptions{
			Name:               fmt.Sprintf("hc-%04d", i),
			Namespace:          fmt.Sprintf("clusters-%02d", i%namespaces),
			ReleaseImage:       releaseImage,
			AvailabilityPolicy: string(hyperv1.SingleReplica),
			// As create cluster finds a node's address.
			ExternalAPIServerAddress: "127.0.0.1",
		}
		for _, obj := range opts.Objects(pullSecret) {
			switch obj := obj.(type) {
			case *corev1.Secret:
				r.secrets = append(r.secrets, obj)
			case *hyperv1.HostedCluster:
				r.clusters = append(r.clusters, obj)
				cp := hyperv1.ControlPlaneNamespace(obj.Namespace, obj.Name)
				for _, k := range r.kinds {
					r.owner[k.resource+" "+k.key(cp, obj.Name)] = i
				}
			}
		}
	}
}

func (r *hcRun) namespaces() []string {
	var out []string
	for _, hc := range r.clusters {
		if !slices.Contains(out, hc.Namespace) {
			out = append(out, hc.Namespace)
		}
	}
	return out
}
