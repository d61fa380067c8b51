// Package doccheck holds the repository-wide test of the documentation rule:
// every package has one package comment, and every exported name a doc
// comment starting with that name.
package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// packageDirs lists the directories of the main module that hold Go code,
// leaving out the separate tools modules and test data.
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, path := range repoFiles(t, "tools", "testdata", "bin") {
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			if dir := filepath.Dir(path); !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
	}
	return dirs
}

func TestDocComments(t *testing.T) {
	for _, dir := range packageDirs(t) {
		t.Run(strings.TrimPrefix(dir, "../../../"), func(t *testing.T) { checkPackage(t, dir) })
	}
}

func checkPackage(t *testing.T, dir string) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	pkgComments := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
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
					if !documented(d.Name.Name, d.Doc, nil, 1) {
						t.Errorf("%s: %s has no doc comment starting with its name", fset.Position(d.Pos()), d.Name.Name)
					}
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							if !documented(s.Name.Name, s.Doc, d.Doc, len(d.Specs)) {
								t.Errorf("%s: %s has no doc comment starting with its name", fset.Position(s.Pos()), s.Name.Name)
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								if !documented(n.Name, s.Doc, d.Doc, len(d.Specs)) {
									t.Errorf("%s: %s has no doc comment starting with its name", fset.Position(n.Pos()), n.Name)
								}
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

// documented reports whether a declared name has a doc comment starting with
// it, or stands in a documented group of several names, which speaks for them.
func documented(name string, spec, group *ast.CommentGroup, specs int) bool {
	switch {
	case spec != nil:
		return strings.HasPrefix(spec.Text(), name+" ")
	case specs > 1:
		return group != nil
	default:
		return group != nil && strings.HasPrefix(group.Text(), name+" ")
	}
}

func exportedRecv(fl *ast.FieldList) bool {
	typ := fl.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}
