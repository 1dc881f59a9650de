// Package crdsuite runs CRD validation test suites against a real API server.
//
// A suite is a YAML file in the shape openshift/api and HyperShift use for
// their `*.testsuite.yaml` files, so their cases can be replayed against this
// project's CRDs:
//
//	name: HostedCluster
//	crdName: hostedclusters.hypershift.openshift.io
//	tests:
//	  onCreate:
//	  - name: a minimal cluster gets defaults
//	    initial: |   # the object to create
//	    expected: |  # the object read back (spec and, if given, status)
//	  - name: a bad CIDR is refused
//	    initial: |
//	    expectedError: "spec.networking.clusterNetwork[0].cidr: Invalid value"
//	  onUpdate:
//	  - name: infraID cannot change
//	    initial: |   # created first (its status, if any, written next)
//	    updated: |   # then written over it (spec, then status)
//	    expectedError: "infraID is immutable"        # refusal of the update
//	    expectedStatusError: "..."                    # refusal of the status write
//	    expected: |  # the object read back after a successful update
//
// An object without metadata.name gets a generated one; without
// metadata.namespace it lands in the namespace the runner is given. An
// object naming its own namespace gets that namespace created when missing.
package crdsuite

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"sigs.k8s.io/yaml"
)

// Suite is one test suite file.
type Suite struct {
	// Path is the file the suite was read from.
	Path string `json:"-"`
	// APIVersion is kept for compatibility with openshift/api's files.
	APIVersion string `json:"apiVersion,omitempty"`
	// Name names the kind under test.
	Name string `json:"name"`
	// CRDName is the CustomResourceDefinition under test.
	CRDName string `json:"crdName"`
	// Tests are the cases.
	Tests Tests `json:"tests"`
}

// Tests groups the cases by the operation they exercise.
type Tests struct {
	OnCreate []OnCreate `json:"onCreate,omitempty"`
	OnUpdate []OnUpdate `json:"onUpdate,omitempty"`
}

// OnCreate is a case that creates one object.
type OnCreate struct {
	Name          string `json:"name"`
	Initial       string `json:"initial"`
	Expected      string `json:"expected,omitempty"`
	ExpectedError string `json:"expectedError,omitempty"`
}

// OnUpdate is a case that creates one object and then updates it.
type OnUpdate struct {
	Name                string `json:"name"`
	Initial             string `json:"initial"`
	Updated             string `json:"updated"`
	Expected            string `json:"expected,omitempty"`
	ExpectedError       string `json:"expectedError,omitempty"`
	ExpectedStatusError string `json:"expectedStatusError,omitempty"`
}

// Load reads every `*.testsuite.yaml` file under dir, sorted by path.
func Load(dir string) ([]Suite, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(path) == ".yaml" && filepath.Ext(path[:len(path)-len(".yaml")]) == ".testsuite" {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to list test suites under %s: %w", dir, err)
	}
	sort.Strings(paths)
	suites := make([]Suite, 0, len(paths))
	for _, path := range paths {
		suite, err := LoadFile(path)
		if err != nil {
			return nil, err
		}
		suites = append(suites, suite)
	}
	return suites, nil
}

// LoadFile reads one suite and checks that every case is well formed.
func LoadFile(path string) (Suite, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Suite{}, fmt.Errorf("failed to read test suite: %w", err)
	}
	var suite Suite
	if err := yaml.UnmarshalStrict(raw, &suite); err != nil {
		return Suite{}, fmt.Errorf("failed to decode test suite %s: %w", path, err)
	}
	suite.Path = path
	if err := suite.validate(); err != nil {
		return Suite{}, fmt.Errorf("test suite %s: %w", path, err)
	}
	return suite, nil
}

func (s Suite) validate() error {
	if s.CRDName == "" {
		return fmt.Errorf("crdName is required")
	}
	seen := map[string]bool{}
	check := func(name, initial string, outcomes int) error {
		switch {
		case name == "":
			return fmt.Errorf("a case has no name")
		case seen[name]:
			return fmt.Errorf("case %q: the name is used twice", name)
		case initial == "":
			return fmt.Errorf("case %q: initial is required", name)
		case outcomes == 0:
			return fmt.Errorf("case %q: give expected, expectedError or expectedStatusError: a case that checks nothing cannot fail", name)
		}
		seen[name] = true
		return nil
	}
	for _, c := range s.Tests.OnCreate {
		if err := check(c.Name, c.Initial, count(c.Expected, c.ExpectedError)); err != nil {
			return err
		}
	}
	for _, c := range s.Tests.OnUpdate {
		if err := check(c.Name, c.Initial, count(c.Expected, c.ExpectedError, c.ExpectedStatusError)); err != nil {
			return err
		}
		if c.Updated == "" {
			return fmt.Errorf("case %q: updated is required", c.Name)
		}
	}
	return nil
}

func count(values ...string) int {
	n := 0
	for _, v := range values {
		if v != "" {
			n++
		}
	}
	return n
}
