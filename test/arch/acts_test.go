// Package arch checks directions of the house that the compiler does not: which code may take an
// Aerospike node down (../shared/ARCHITECTURE.md, issue 41).
package arch

import (
	"fmt"
	"go/ast"
	"go/types"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const module = "github.com/acko-io/acko"

// actuatorFile is the actuator (issue 41): every act that takes an Aerospike node down is in it, and the
// rest of the project reaches its acts only through its entries.
const actuatorFile = "internal/controller/cluster/actuator.go"

// actuatorEntries are the actuator's functions the rest of its package may call, each of which holds its
// own guard: takeDownNow (the door, then the act the caller hands it); setReplicas (a StatefulSet's
// replicas, lowered below a pod of its only as far as the door let it); deleteSet (a StatefulSet deleted
// orphaning its pods, or with them once it has none); deleteGivenUpAgain (a pod whose volumes the door
// let go, deleted again, at once once its node is out of service: describePinned). The executor of
// operations reaches the actuator through the operations.Actuator interface.
var actuatorEntries = []string{"takeDownNow", "setReplicas", "deleteSet", "deleteGivenUpAgain"}

// TestOnlyTheActuatorTakesNodesDown reads every package of the module (not its tests) with types and
// finds each act that can take an Aerospike node down: a pod removed (pods.Remove) or deleted, a claim or
// a StatefulSet deleted, asd signalled (SignalRestart), a StatefulSet's replicas set.
func TestOnlyTheActuatorTakesNodesDown(t *testing.T) {
	found := map[string]bool{}
	for _, pkg := range loadTyped(t, module+"/internal/...", module+"/cmd/...") {
		switch pkg.PkgPath {
		case module + "/internal/pods", module + "/internal/podexec", module + "/internal/resources":
			continue // the mechanisms and the builders
		}
		for _, file := range pkg.Syntax {
			name, err := filepath.Rel(mustAbs(t, "../.."), pkg.Fset.File(file.Pos()).Name())
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range file.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				for _, act := range actsIn(pkg.TypesInfo, fn.Body) {
					found[fmt.Sprintf("%s: %s: %s", name, funcName(pkg.TypesInfo, fn), act)] = true
				}
			}
		}
	}
	for _, site := range slices.Sorted(maps.Keys(found)) {
		if !strings.HasPrefix(site, actuatorFile+":") {
			t.Errorf("%s takes an Aerospike node down outside the actuator: hand the act to it (%s)", site, actuatorFile)
		}
	}
	if len(found) == 0 {
		t.Fatal("no act found anywhere: the check would pass on nothing")
	}
}

// TestTheActuatorIsReachedOnlyThroughItsEntries: outside actuator.go, the code of its package refers to
// none of the actuator's functions or methods but its entries, so that no act is reached without the
// door.
func TestTheActuatorIsReachedOnlyThroughItsEntries(t *testing.T) {
	root := mustAbs(t, "../..")
	actuator := filepath.Join(root, actuatorFile)
	declared := 0
	for _, pkg := range loadTyped(t, module+"/internal/controller/cluster") {
		for ident, obj := range pkg.TypesInfo.Defs {
			if fn, ok := obj.(*types.Func); ok && pkg.Fset.Position(ident.Pos()).Filename == actuator && fn.Name() != "" {
				declared++
			}
		}
		for ident, obj := range pkg.TypesInfo.Uses {
			fn, ok := obj.(*types.Func)
			if !ok || pkg.Fset.Position(fn.Pos()).Filename != actuator || slices.Contains(actuatorEntries, fn.Name()) {
				continue
			}
			if at := pkg.Fset.Position(ident.Pos()); at.Filename != actuator {
				name, _ := filepath.Rel(root, at.Filename)
				t.Errorf("%s:%d calls the actuator's %s: go through one of its entries (%s)", name, at.Line, fn.Name(),
					strings.Join(actuatorEntries, ", "))
			}
		}
	}
	if declared == 0 {
		t.Fatalf("no function declared in %s: the check would pass on nothing", actuatorFile)
	}
}

// actsIn names the acts in a function body.
func actsIn(info *types.Info, body *ast.BlockStmt) []string {
	var acts []string
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if act := callAct(info, n); act != "" {
				acts = append(acts, act)
			}
		case *ast.AssignStmt:
			for _, lhs := range n.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Replicas" && isStatefulSetSpec(info.TypeOf(sel.X)) {
					acts = append(acts, "set replicas")
				}
			}
		}
		return true
	})
	return acts
}

// callAct names the act a call is ("" when none).
func callAct(info *types.Info, call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	obj := info.Uses[sel.Sel]
	fn, ok := obj.(*types.Func)
	if !ok || fn.Pkg() == nil {
		return ""
	}
	switch {
	case fn.Pkg().Path() == module+"/internal/pods" && fn.Name() == "Remove":
		return "remove pod"
	case fn.Name() == "SignalRestart":
		return "signal asd"
	case fn.Name() == "Delete" && strings.HasPrefix(fn.Pkg().Path(), "sigs.k8s.io/controller-runtime") && len(call.Args) >= 2:
		switch what := typeName(info.TypeOf(call.Args[1])); what {
		case "Pod", "PersistentVolumeClaim", "StatefulSet":
			return "delete " + what
		}
	}
	return ""
}

func isStatefulSetSpec(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == "StatefulSetSpec" && n.Obj().Pkg().Path() == "k8s.io/api/apps/v1"
}

// typeName is the name of a (pointer to a) named type of k8s.io/api, "" for any other.
func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil && strings.HasPrefix(n.Obj().Pkg().Path(), "k8s.io/api/") {
		return n.Obj().Name()
	}
	return ""
}

// funcName is the function's name with its receiver's type: "(*T).m" or "f".
func funcName(info *types.Info, fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	return "(" + types.TypeString(info.TypeOf(fn.Recv.List[0].Type), func(*types.Package) string { return "" }) + ")." + fn.Name.Name
}

// loadTyped loads the packages (not their tests) with their syntax and types; a package that does not
// type-check fails the test.
func loadTyped(t *testing.T, patterns ...string) []*packages.Package {
	t.Helper()
	key := strings.Join(patterns, " ")
	if pkgs, ok := loaded[key]; ok {
		return pkgs
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes |
		packages.NeedTypesInfo, Dir: "../.."}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pkgs {
		for _, e := range pkg.Errors {
			t.Fatalf("%s: %v", pkg.PkgPath, e)
		}
	}
	loaded[key] = pkgs
	return pkgs
}

// loaded keeps what loadTyped loaded, by patterns: type-checking the module is most of this package's time.
var loaded = map[string][]*packages.Package{}

func mustAbs(t *testing.T, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
