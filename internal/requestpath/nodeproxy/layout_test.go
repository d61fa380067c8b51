package nodeproxy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFileLines bounds every file of the package, tests included.
const maxFileLines = 400

// TestLayout holds the package to the shape doc.go describes: a type with
// methods in a stage's files (1route, 2session, 3wake, 4forward, 5answer)
// has them all there, and no file is longer than maxFileLines. The
// assembly (Proxy: 0handler.go, proxy.go, server.go, ops.go) is no stage.
func TestLayout(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	groups := map[string]map[string]bool{} // type -> file groups of its methods
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(src), "\n"); n > maxFileLines {
			t.Errorf("%s: %d lines, more than %d", name, n, maxFileLines)
		}
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			typ := receiverType(fn.Recv.List[0].Type)
			if groups[typ] == nil {
				groups[typ] = map[string]bool{}
			}
			groups[typ][fileGroup(name)] = true
		}
	}
	for typ, in := range groups {
		stages := 0
		for g := range in {
			if isStage(g) {
				stages++
			}
		}
		if stages > 1 || (stages == 1 && len(in) > 1) {
			t.Errorf("the methods of %s are spread over %v", typ, keys(in))
		}
	}
}

// receiverType is the type name of a method's receiver.
func receiverType(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// fileGroup is a file's stage prefix ("2session" of "2session_renew.go"),
// or its name without ".go" when it belongs to no stage.
func fileGroup(name string) string {
	name = strings.TrimSuffix(name, ".go")
	if isStage(name) {
		name, _, _ = strings.Cut(name, "_")
	}
	return name
}

// isStage reports whether a file or group name starts with a stage's
// number.
func isStage(name string) bool {
	return name != "" && name[0] >= '1' && name[0] <= '9'
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
