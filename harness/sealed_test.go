package harness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestNoExportedMutableState: what the harness saw, and its handles, are
// read through methods only: State, SessionState, Env and Bridge export no
// field, and no exported package variable can be reassigned (error values
// aside, as Go has them).
func TestNoExportedMutableState(t *testing.T) {
	sealed := map[string]bool{"State": true, "SessionState": true, "Env": true, "Bridge": true}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range entries {
		if !strings.HasSuffix(ent.Name(), ".go") || strings.HasSuffix(ent.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, ent.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					if g.Tok != token.VAR {
						continue
					}
					for _, n := range s.Names {
						if n.IsExported() && !strings.HasPrefix(n.Name, "Err") {
							t.Errorf("%s: package variable %s is exported (a function or a constant cannot be changed by an importer)", fset.Position(n.Pos()), n.Name)
						}
					}
				case *ast.TypeSpec:
					st, ok := s.Type.(*ast.StructType)
					if !ok || !sealed[s.Name.Name] {
						continue
					}
					for _, fld := range st.Fields.List {
						for _, n := range fld.Names {
							if n.IsExported() {
								t.Errorf("%s: %s.%s is an exported field: read it through a method", fset.Position(n.Pos()), s.Name.Name, n.Name)
							}
						}
						if len(fld.Names) == 0 {
							t.Errorf("%s: %s embeds a type, whose fields it exports", fset.Position(fld.Pos()), s.Name.Name)
						}
					}
				}
			}
		}
	}
}
