package jwt

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocComments enforces the style rule: one package comment, in doc.go,
// and a doc comment starting with its name on every exported declaration.
func TestDocComments(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if hasDoc := f.Doc != nil; hasDoc != (name == "doc.go") {
			t.Errorf("%s: package comment present = %v; only doc.go has one", name, hasDoc)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && !exportedRecv(d.Recv.List[0].Type) {
					continue
				}
				checkDoc(t, fset, d.Name, d.Doc)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						checkDoc(t, fset, s.Name, docOr(s.Doc, d))
					case *ast.ValueSpec:
						for _, n := range s.Names {
							checkDoc(t, fset, n, docOr(s.Doc, d))
						}
					}
				}
			}
		}
	}
}

// docOr is a spec's own comment, or its declaration's when it stands alone.
func docOr(doc *ast.CommentGroup, d *ast.GenDecl) *ast.CommentGroup {
	if doc == nil && len(d.Specs) == 1 {
		return d.Doc
	}
	return doc
}

func exportedRecv(expr ast.Expr) bool {
	if star, ok := expr.(*ast.StarExpr); ok {
		expr = star.X
	}
	id, ok := expr.(*ast.Ident)
	return ok && id.IsExported()
}

func checkDoc(t *testing.T, fset *token.FileSet, name *ast.Ident, doc *ast.CommentGroup) {
	t.Helper()
	if !name.IsExported() {
		return
	}
	if doc == nil || !strings.HasPrefix(doc.Text(), name.Name+" ") {
		t.Errorf("%s: %s needs a doc comment starting with its name", fset.Position(name.Pos()), name.Name)
	}
}
