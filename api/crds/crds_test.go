package crds

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
)

// TestEveryKindHasACRD checks that the embedded CRDs are exactly the kinds
// the API package registers: a kind added to the scheme without its
// generated CRD (or a CRD left behind by a removed kind) fails here, not in
// a cluster that `hypershift install` set up without it.
func TestEveryKindHasACRD(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := errors.Join(hyperv1.AddToScheme(scheme), infrav1.AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	groups := map[string]string{}
	var registered []string
	for _, gv := range []schema.GroupVersion{hyperv1.GroupVersion, infrav1.GroupVersion} {
		for kind, typ := range scheme.KnownTypes(gv) {
			if strings.HasPrefix(typ.PkgPath(), apiModule) && !strings.HasSuffix(kind, "List") {
				registered = append(registered, kind)
				groups[kind] = gv.Group
			}
		}
	}
	slices.Sort(registered)

	list, err := CustomResourceDefinitions()
	if err != nil {
		t.Fatal(err)
	}
	var embedded []string
	for _, crd := range list {
		if want := groups[crd.Spec.Names.Kind]; crd.Spec.Group != want {
			t.Errorf("CRD %s is of group %s, want %s", crd.Name, crd.Spec.Group, want)
		}
		embedded = append(embedded, crd.Spec.Names.Kind)
	}
	slices.Sort(embedded)

	if !slices.Equal(registered, embedded) {
		t.Errorf("the scheme registers %v, the embedded CRDs are of %v: run make generate", registered, embedded)
	}
}

// apiModule is where the project's API packages are.
var apiModule = strings.TrimSuffix(reflect.TypeFor[hyperv1.HostedCluster]().PkgPath(), "/hypershift/v1beta1")

// TestClusterAPIContract: the kinds cluster-api references (the
// HostedControlPlane as its Cluster's control plane, the infrastructure
// kinds) tell it, by a label on their CRDs, that their v1beta1 keeps its
// v1beta2 contract; cluster-api's own CRDs load.
func TestClusterAPIContract(t *testing.T) {
	list, err := CustomResourceDefinitions()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range list {
		referenced := crd.Spec.Group == infrav1.GroupVersion.Group || crd.Spec.Names.Kind == "HostedControlPlane"
		if got := crd.Labels[infrav1.ContractLabel]; referenced && got != "v1beta1" {
			t.Errorf("CRD %s: label %s=%q, want v1beta1", crd.Name, infrav1.ContractLabel, got)
		}
	}
	capi, err := ClusterAPICustomResourceDefinitions()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, crd := range capi {
		kinds = append(kinds, crd.Spec.Names.Kind)
	}
	for _, want := range []string{"Cluster", "Machine", "MachineDeployment", "MachineHealthCheck", "MachineSet"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("cluster-api's CRDs %v have no %s", kinds, want)
		}
	}
}
