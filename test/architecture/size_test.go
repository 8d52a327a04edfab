package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
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
	for _, rel := range handWrittenSources(t) {
		if strings.HasSuffix(rel, ".pb.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > maxFunctionLines {
				t.Errorf("%s:%d: %s spans %d lines, more than %d", rel, start.Line, fn.Name.Name, n, maxFunctionLines)
			}
		}
	}
}
