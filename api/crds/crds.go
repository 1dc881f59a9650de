// Package crds embeds the CustomResourceDefinitions that controller-gen
// generates from api/hypershift/v1beta1, and the ValidatingAdmissionPolicy
// that completes their validation where a CRD schema cannot see, so the CLI
// installs them and the tests load them without any file on disk.
package crds

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed hypershift.openshift.io_*.yaml
var files embed.FS

// CustomResourceDefinitions returns the project's CRDs, sorted by name.
func CustomResourceDefinitions() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(files, "*.yaml")
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
