// Package crds embeds the CustomResourceDefinitions that controller-gen
// generates from api/hypershift/v1beta1 and api/infrastructure/v1beta1,
// cluster-api's (cluster-api/, as its module pins them: `make generate`
// copies them), and the ValidatingAdmissionPolicy that completes their
// validation where a CRD schema cannot see, so the CLI installs them and
// the tests load them without any file on disk.
package crds

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed hypershift.openshift.io_*.yaml infrastructure.hypershift.openshift.io_*.yaml cluster-api/*.yaml
var files embed.FS

// CustomResourceDefinitions returns the project's CRDs, sorted by name.
func CustomResourceDefinitions() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return load("*.yaml")
}

// ClusterAPICustomResourceDefinitions returns cluster-api's CRDs of the
// kinds its manager watches for NodePools of platform Pod, sorted by name.
func ClusterAPICustomResourceDefinitions() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return load("cluster-api/*.yaml")
}

// load decodes the embedded CRDs whose files match pattern.
func load(pattern string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(files, pattern)
	if err != nil {
		return nil, fmt.Errorf("failed to list embedded CRDs: %w", err)
	}
	sort.Strings(names)
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		raw, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("failed to read embedded CRD %s: %w", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("failed to decode embedded CRD %s: %w", name, err)
		}
		out = append(out, crd)
	}
	return out, nil
}
