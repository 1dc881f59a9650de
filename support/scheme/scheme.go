// Package scheme builds the one runtime scheme the project's binaries and
// tests use: the Kubernetes built-in types, the apiextensions types, the
// hypershift.openshift.io and infrastructure.hypershift.openshift.io types,
// and cluster-api's (v1beta2), which NodePools of platform Pod are made of.
package scheme

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
)

// New returns a new scheme with every type the project reads or writes.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, hyperv1.AddToScheme, infrav1.AddToScheme, clusterv1.AddToScheme} {
		if err := add(s); err != nil {
			// Registering fixed, generated types cannot fail at run time.
			panic(fmt.Sprintf("failed to build the scheme: %v", err))
		}
	}
	return s
}
