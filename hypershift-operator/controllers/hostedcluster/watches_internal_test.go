package hostedcluster

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// TestWarmCacheCoversEveryWatch checks, in setup.go's source, that every
// kind SetupWithManager watches through the manager's cache (For and
// Watches) is in watchedKinds, whose informers run before the replica
// leads: a watch added without it would leave that kind's cache cold on a
// standby that takes over.
func TestWarmCacheCoversEveryWatch(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "setup.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	kindsIn := func(fn string, calls ...string) []string {
		var kinds []string
		for _, decl := range file.Decls {
			f, ok := decl.(*ast.FuncDecl)
			if !ok || f.Name.Name != fn {
				continue
			}
			ast.Inspect(f.Body, func(n ast.Node) bool {
				var lit *ast.CompositeLit
				switch n := n.(type) {
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok || !slices.Contains(calls, sel.Sel.Name) || len(n.Args) == 0 {
						return true
					}
					if u, ok := n.Args[0].(*ast.UnaryExpr); ok && u.Op == token.AND {
						lit, _ = u.X.(*ast.CompositeLit)
					}
				case *ast.UnaryExpr:
					if len(calls) == 0 && n.Op == token.AND {
						lit, _ = n.X.(*ast.CompositeLit)
					}
				}
				if lit != nil {
					var b strings.Builder
					if err := printer.Fprint(&b, fset, lit.Type); err != nil {
						t.Fatal(err)
					}
					kinds = append(kinds, b.String())
				}
				return true
			})
		}
		return kinds
	}
	watched := kindsIn("SetupWithManager", "For", "Watches")
	warm := kindsIn("watchedKinds")
	if len(watched) < 10 || len(warm) < 10 {
		t.Fatalf("found %d watched kinds and %d warmed ones in setup.go: the test no longer reads it right", len(watched), len(warm))
	}
	for _, kind := range watched {
		if !slices.Contains(warm, kind) {
			t.Errorf("SetupWithManager watches %s, which watchedKinds does not list: its informer would start only when the replica leads", kind)
		}
	}
	for _, kind := range warm {
		if !slices.Contains(watched, kind) {
			t.Errorf("watchedKinds lists %s, which SetupWithManager does not watch: every replica would cache it for nothing", kind)
		}
	}
}
