package arch

import (
	"go/ast"
	"go/types"
	"path/filepath"
	"testing"
)

// statusPathFile is the cluster reconciler's status path (issue 41): the only code that writes an
// AerospikeCluster's status through the status writer.
const statusPathFile = "internal/controller/cluster/status_path.go"

// TestOnlyTheStatusPathWritesClusterStatus fails for a call of the status writer's methods (Update,
// UpdateFresh, WriteStatus) anywhere in the module outside the status path, and for a status update or
// patch of an AerospikeCluster that goes around the writer (the writer's own package aside). The
// operations executor's transitions go through its operations.StatusWriter, wired in cmd/main.go.
func TestOnlyTheStatusPathWritesClusterStatus(t *testing.T) {
	root := mustAbs(t, "../..")
	writes := 0
	for _, pkg := range loadTyped(t, module+"/internal/...", module+"/cmd/...") {
		if pkg.PkgPath == module+"/internal/status" {
			continue
		}
		for _, file := range pkg.Syntax {
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				what := statusWrite(pkg.TypesInfo, call)
				if what == "" {
					return true
				}
				at := pkg.Fset.Position(call.Pos())
				name, _ := filepath.Rel(root, at.Filename)
				if name == statusPathFile {
					writes++
					return true
				}
				t.Errorf("%s:%d %s outside the status path: write through it (%s)", name, at.Line, what, statusPathFile)
				return true
			})
		}
	}
	if writes == 0 {
		t.Fatalf("no status write found in %s: the check would pass on nothing", statusPathFile)
	}
}

// statusWrite names the status write a call is ("" when none).
func statusWrite(info *types.Info, call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	fn, ok := info.Uses[sel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return ""
	}
	if fn.Pkg().Path() == module+"/internal/status" {
		switch fn.Name() {
		case "Update", "UpdateFresh", "WriteStatus":
			return "calls the status writer's " + fn.Name()
		}
	}
	if (fn.Name() == "Update" || fn.Name() == "Patch") && len(call.Args) >= 2 && isClusterType(info.TypeOf(call.Args[1])) {
		if inner, ok := sel.X.(*ast.CallExpr); ok {
			if s, ok := inner.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Status" {
				return "writes an AerospikeCluster's status"
			}
		}
	}
	return ""
}

func isClusterType(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == "AerospikeCluster" && n.Obj().Pkg().Path() == module+"/api/v1alpha1"
}
