package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFunctionLines is the most lines a production function may span: one that does not fit on
// a screen or two is steps waiting for names (a reconcile reads as named steps).
const maxFunctionLines = 100

// Production code (pkg and cmd, not tests, not generated) has no function over
// maxFunctionLines lines.
func TestNoLongFunctions(t *testing.T) {
	fset := token.NewFileSet()
	for _, top := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "generated" {
					return filepath.SkipDir
				}
				return nil
			}
			name := d.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated") || strings.HasSuffix(name, ".pb.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
				if n := end.Line - start.Line + 1; n > maxFunctionLines {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d: %s spans %d lines, more than %d", rel, start.Line, fn.Name.Name, n, maxFunctionLines)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
