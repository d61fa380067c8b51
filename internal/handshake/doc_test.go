package handshake

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestDocComments enforces the style rule: one package comment, and a doc
// comment starting with its name on every exported declaration.
func TestDocComments(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	pkgComments := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			pkgComments++
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv)) {
					checkDoc(t, fset, d.Name.Name, d.Doc, d.Pos())
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							checkDoc(t, fset, s.Name.Name, cmpDoc(s.Doc, d.Doc, len(d.Specs)), s.Pos())
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								checkDoc(t, fset, n.Name, cmpDoc(s.Doc, d.Doc, len(d.Specs)), n.Pos())
							}
						}
					}
				}
			}
		}
	}
	if pkgComments != 1 {
		t.Errorf("%d files have a package comment, want exactly 1", pkgComments)
	}
}

// cmpDoc returns a spec's own doc, or its group's when the group has one
// spec.
func cmpDoc(spec, group *ast.CommentGroup, specs int) *ast.CommentGroup {
	if spec != nil || specs > 1 {
		return spec
	}
	return group
}

func exportedRecv(fl *ast.FieldList) bool {
	typ := fl.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}

func checkDoc(t *testing.T, fset *token.FileSet, name string, doc *ast.CommentGroup, pos token.Pos) {
	t.Helper()
	text := ""
	if doc != nil {
		text = doc.Text()
	}
	if !strings.HasPrefix(text, name+" ") {
		t.Errorf("%s: %s has no doc comment starting with its name", fset.Position(pos), name)
	}
}
