package crds

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// TestEveryKindHasACRD checks that the embedded CRDs are exactly the kinds
// the API package registers: a kind added to the scheme without its
// generated CRD (or a CRD left behind by a removed kind) fails here, not in
// a cluster that `hypershift install` set up without it.
func TestEveryKindHasACRD(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := hyperv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	apiPackage := reflect.TypeFor[hyperv1.HostedCluster]().PkgPath()
	var registered []string
	for kind, typ := range scheme.KnownTypes(hyperv1.GroupVersion) {
		if typ.PkgPath() == apiPackage && !strings.HasSuffix(kind, "List") {
			registered = append(registered, kind)
		}
	}
	slices.Sort(registered)

	list, err := CustomResourceDefinitions()
	if err != nil {
		t.Fatal(err)
	}
	var embedded []string
	for _, crd := range list {
		if crd.Spec.Group != hyperv1.GroupVersion.Group {
			t.Errorf("CRD %s is of group %s, want %s", crd.Name, crd.Spec.Group, hyperv1.GroupVersion.Group)
		}
		embedded = append(embedded, crd.Spec.Names.Kind)
	}
	slices.Sort(embedded)

	if !slices.Equal(registered, embedded) {
		t.Errorf("the scheme registers %v, the embedded CRDs are of %v: run make generate", registered, embedded)
	}
}
