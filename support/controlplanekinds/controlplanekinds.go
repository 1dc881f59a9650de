// Package controlplanekinds lists, in one place, the kinds of object the
// control-plane-operator keeps in its control-plane namespace: what its
// components and its PKI render, and what is made from that. The operator's
// watches, the kinds its teardown deletes and its Role's rules on them
// (hypershift-operator/rbac, which the hypershift-operator's ClusterRole
// includes) all come from All. A test of control-plane-operator/components
// renders every component and the PKI, and fails when a rendered kind is
// missing here, or a kind listed here is rendered by nothing.
package controlplanekinds

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind is one kind of object in a control-plane namespace and what the
// control-plane-operator does with it. It watches every Kind (the objects
// labelled with a component).
type Kind struct {
	// GVK names the kind.
	GVK schema.GroupVersionKind
	// Resource is the kind's resource, as RBAC names it.
	Resource string
	// Applied is true when the operator renders and applies objects of
	// the kind; false when others make them from what it applies, and it
	// only reads them.
	Applied bool
	// Deleted is true when the operator's teardown deletes the kind's
	// objects; false when they hold data and go with their namespace.
	Deleted bool
	// New returns an empty object of the kind, NewList an empty list.
	New     func() client.Object
	NewList func() client.ObjectList
}

// Verbs are the operator's verbs on the kind: get, list and watch (its
// cache), create and patch (server-side apply) when Applied, delete when
// Deleted.
func (k Kind) Verbs() []string {
	verbs := []string{"get", "list", "watch"}
	if k.Applied {
		verbs = append(verbs, "create", "patch")
	}
	if k.Deleted {
		verbs = append(verbs, "delete")
	}
	return verbs
}

// All are the kinds, in the order of the Role's rules. Nothing changes it
// at run time.
var All = []Kind{
	// The components' workloads and their PodDisruptionBudgets.
	{
		GVK: appsv1.SchemeGroupVersion.WithKind("Deployment"), Resource: "deployments", Applied: true, Deleted: true,
		New: func() client.Object { return &appsv1.Deployment{} }, NewList: func() client.ObjectList { return &appsv1.DeploymentList{} },
	},
	{
		GVK: appsv1.SchemeGroupVersion.WithKind("StatefulSet"), Resource: "statefulsets", Applied: true, Deleted: true,
		New: func() client.Object { return &appsv1.StatefulSet{} }, NewList: func() client.ObjectList { return &appsv1.StatefulSetList{} },
	},
	{
		GVK: policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), Resource: "poddisruptionbudgets", Applied: true, Deleted: true,
		New: func() client.Object { return &policyv1.PodDisruptionBudget{} }, NewList: func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} },
	},
	// The components' Services.
	{
		GVK: corev1.SchemeGroupVersion.WithKind("Service"), Resource: "services", Applied: true, Deleted: true,
		New: func() client.Object { return &corev1.Service{} }, NewList: func() client.ObjectList { return &corev1.ServiceList{} },
	},
	// The components' configuration files (the kube-apiserver's audit
	// policy).
	{
		GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Resource: "configmaps", Applied: true, Deleted: true,
		New: func() client.Object { return &corev1.ConfigMap{} }, NewList: func() client.ObjectList { return &corev1.ConfigMapList{} },
	},
	// etcd's claims, made by the StatefulSet controller from its
	// volumeClaimTemplates: read to say why etcd does not start, never
	// written (they hold the data).
	{
		GVK: corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), Resource: "persistentvolumeclaims",
		New: func() client.Object { return &corev1.PersistentVolumeClaim{} }, NewList: func() client.ObjectList { return &corev1.PersistentVolumeClaimList{} },
	},
	// The PKI's Secrets: watched, so a deleted Secret comes back; never
	// deleted by the operator (keys and the CAs hold data).
	{
		GVK: corev1.SchemeGroupVersion.WithKind("Secret"), Resource: "secrets", Applied: true,
		New: func() client.Object { return &corev1.Secret{} }, NewList: func() client.ObjectList { return &corev1.SecretList{} },
	},
}
