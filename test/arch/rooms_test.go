package arch

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// reconcilers are the packages of the three reconcilers (../shared/ARCHITECTURE.md: one package per
// reconciler). None imports another: what they share lives below them (the status writer, the pods'
// log reader, toolrun for the tools' Jobs).
var reconcilers = []string{
	module + "/internal/controller/cluster",
	module + "/internal/controller/backup",
	module + "/internal/controller/restore",
}

// TestReconcilersImportNoOtherReconciler fails when a reconciler's package imports another's, directly
// or through any package below it.
func TestReconcilersImportNoOtherReconciler(t *testing.T) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps, Dir: "../.."}
	pkgs, err := packages.Load(cfg, reconcilers...)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != len(reconcilers) {
		t.Fatalf("loaded %d packages, want the %d reconcilers", len(pkgs), len(reconcilers))
	}
	for _, pkg := range pkgs {
		seen := map[string]bool{}
		var walk func(p *packages.Package, path []string)
		walk = func(p *packages.Package, path []string) {
			for _, dep := range p.Imports {
				if !strings.HasPrefix(dep.PkgPath, module+"/") || seen[dep.PkgPath] {
					continue
				}
				seen[dep.PkgPath] = true
				via := append(slices.Clone(path), dep.PkgPath)
				if slices.Contains(reconcilers, dep.PkgPath) {
					t.Errorf("%s imports the reconciler %s (%s)", pkg.PkgPath, dep.PkgPath, strings.Join(via, " → "))
				}
				walk(dep, via)
			}
		}
		walk(pkg, nil)
	}
}
