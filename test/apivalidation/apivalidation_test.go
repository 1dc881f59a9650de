package apivalidation_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hypershift-le/hypershift/test/crdsuite"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{}, &env)) }

// TestCRDValidation replays every api/**/tests/**/*.testsuite.yaml against
// the real API server, with the project's CRDs and admission policies.
func TestCRDValidation(t *testing.T) {
	root, err := testenv.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	suites, err := crdsuite.Load(filepath.Join(root, "api"))
	if err != nil {
		t.Fatal(err)
	}
	if len(suites) < 2 {
		t.Fatalf("found %d test suites under api/, want one per CRD at least", len(suites))
	}
	runner := crdsuite.Runner{Client: env.Client, Namespace: env.Namespace}
	for _, suite := range suites {
		t.Run(filepath.Base(filepath.Dir(suite.Path))+"/"+filepath.Base(suite.Path), func(t *testing.T) {
			runner.Run(t, suite)
		})
	}
}
