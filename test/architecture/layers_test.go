// Package architecture checks the package layers written in docs/architecture.md against what
// the packages under pkg/ and cmd/ import.
package architecture

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const root = "../.."

// layer is one row of the table in docs/architecture.md.
type layer struct {
	n        int
	patterns []string
}

var (
	layerRow = regexp.MustCompile(`^\|\s*(\d+)\s*\|.*\|(.*)\|\s*$`)
	pattern  = regexp.MustCompile("`([^`]+)`")
)

// readLayers reads the table of the "## Layers" section of docs/architecture.md.
func readLayers(t *testing.T) []layer {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var layers []layer
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Layers"
			continue
		}
		m := layerRow.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		l := layer{n: n}
		for _, p := range pattern.FindAllStringSubmatch(m[2], -1) {
			l.patterns = append(l.patterns, p[1])
		}
		layers = append(layers, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(layers) < 2 {
		t.Fatalf("docs/architecture.md: no layer table under \"## Layers\" (found %d rows)", len(layers))
	}
	return layers
}

// layerOf is the layer of the longest pattern that matches dir ("pkg/x/y"), or 0 for none.
func layerOf(layers []layer, dir string) (int, string) {
	best, bestLen, by := 0, -1, ""
	for _, l := range layers {
		for _, p := range l.patterns {
			prefix, tree := strings.CutSuffix(p, "/...")
			if dir == prefix || (tree && strings.HasPrefix(dir, prefix+"/")) {
				if len(prefix) > bestLen {
					best, bestLen, by = l.n, len(prefix), p
				}
			}
		}
	}
	return best, by
}

func modulePath(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if m, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod: no module line")
	return ""
}

// packageImports maps each directory under pkg/ and cmd/ holding non-test Go files to the
// module's packages those files import (as directories).
func packageImports(t *testing.T, module string) map[string]map[string]bool {
	t.Helper()
	imports := map[string]map[string]bool{}
	fset := token.NewFileSet()
	for _, top := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			file, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			dir := filepath.ToSlash(rel)
			if imports[dir] == nil {
				imports[dir] = map[string]bool{}
			}
			for _, spec := range file.Imports {
				p, _ := strconv.Unquote(spec.Path.Value)
				if to, ok := strings.CutPrefix(p, module+"/"); ok {
					imports[dir][to] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return imports
}

// TestNoImportPointsUp fails on any package that imports one of a higher layer, and on any
// package docs/architecture.md does not place.
func TestNoImportPointsUp(t *testing.T) {
	layers := readLayers(t)
	imports := packageImports(t, modulePath(t))
	if len(imports) < 20 {
		t.Fatalf("found only %d packages under pkg/ and cmd/: is root %q the repository?", len(imports), root)
	}
	var problems []string
	for dir, deps := range imports {
		from, fromBy := layerOf(layers, dir)
		if from == 0 {
			problems = append(problems, fmt.Sprintf("%s: in no layer of docs/architecture.md; place it there", dir))
			continue
		}
		for dep := range deps {
			to, toBy := layerOf(layers, dep)
			if to == 0 {
				problems = append(problems, fmt.Sprintf("%s imports %s, which is in no layer of docs/architecture.md", dir, dep))
			} else if to < from {
				problems = append(problems, fmt.Sprintf("%s (layer %d, %s) imports %s (layer %d, %s): an arrow back up",
					dir, from, fromBy, dep, to, toBy))
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestLayerOf checks the matching rule the table relies on: the longest pattern decides.
func TestLayerOf(t *testing.T) {
	layers := []layer{
		{1, []string{"cmd/..."}},
		{2, []string{"pkg/lifecycle"}},
		{3, []string{"pkg/lifecycle/..."}},
		{4, []string{"pkg/lifecycle/component/..."}},
	}
	for dir, want := range map[string]int{
		"cmd":                            1,
		"cmd/butler-apiserver/app":       1,
		"pkg/lifecycle":                  2,
		"pkg/lifecycle/team":             3,
		"pkg/lifecycle/component":        4,
		"pkg/lifecycle/component/access": 4,
		"pkg/lifecyclex":                 0,
		"pkg/quota":                      0,
	} {
		if got, _ := layerOf(layers, dir); got != want {
			t.Errorf("layerOf(%q) = %d, want %d", dir, got, want)
		}
	}
}
