package addons

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// Budgets of one chart, its nested chart archives (charts/*.tgz) included: Helm's loader gives
// each nested archive a fresh 100 MiB, so a few kilobytes of nested archives decompress to
// gigabytes. Here the outer archive is streamed from disk and every nested archive is expanded
// in place, all against one budget; what Helm then loads is plain files.
const (
	// maxChartBytes is what a chart may decompress to, in all. The catalog's largest (cilium)
	// is under 2 MiB.
	maxChartBytes = 32 << 20
	// maxChartFileBytes is the largest one file may be (Helm's own limit).
	maxChartFileBytes = 5 << 20
	// maxChartFiles bounds the number of files (each costs memory beyond its bytes).
	maxChartFiles = 10000
	// maxChartNesting is how deep chart archives may nest (a chart, its subchart's archive, ...).
	maxChartNesting = 4
)

var drivePath = regexp.MustCompile(`^[a-zA-Z]:/`)

// chartBudget is what is left of a chart's budgets while it is expanded.
type chartBudget struct {
	bytes int64
	files int
}

// loadArchive loads a chart archive from path within the budgets.
func loadArchive(file string) (*chart.Chart, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	budget := &chartBudget{bytes: maxChartBytes, files: maxChartFiles}
	files, err := expandArchive(f, "", 1, budget)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("no files in chart archive")
	}
	return loader.LoadFiles(files)
}

// expandArchive reads a gzipped tar of one chart (its files under one top directory) into files
// named under prefix, nested chart archives expanded as directories of their own.
func expandArchive(in io.Reader, prefix string, depth int, budget *chartBudget) ([]*loader.BufferedFile, error) {
	if depth > maxChartNesting {
		return nil, fmt.Errorf("%schart archives nest deeper than %d", prefix, maxChartNesting)
	}
	gz, err := gzip.NewReader(in)
	if err != nil {
		return nil, fmt.Errorf("%s%w", prefix, err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	var files []*loader.BufferedFile
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s%w", prefix, err)
		}
		if hd.Typeflag != tar.TypeReg {
			continue // directories, links and extended headers: Helm reads regular files only
		}
		name, err := archiveName(hd.Name)
		if err != nil {
			return nil, fmt.Errorf("%s%w", prefix, err)
		}
		if budget.files--; budget.files < 0 {
			return nil, fmt.Errorf("the chart has more than %d files", maxChartFiles)
		}
		data, err := readBudgeted(tr, prefix+name, budget)
		if err != nil {
			return nil, err
		}
		if sub, ok := nestedArchive(name); ok {
			more, err := expandArchive(bytes.NewReader(data), prefix+sub+"/", depth+1, budget)
			if err != nil {
				return nil, err
			}
			files = append(files, more...)
			continue
		}
		files = append(files, &loader.BufferedFile{Name: prefix + name, Data: bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))})
	}
}

// readBudgeted reads one file, counting it against the budget as it decompresses.
func readBudgeted(r io.Reader, name string, budget *chartBudget) ([]byte, error) {
	limit := min(budget.bytes, maxChartFileBytes)
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > limit {
		if limit == maxChartFileBytes {
			return nil, fmt.Errorf("%s decompresses to more than %d bytes, the most one file of a chart may", name, maxChartFileBytes)
		}
		return nil, fmt.Errorf("the chart decompresses to more than %d bytes, nested archives included", maxChartBytes)
	}
	budget.bytes -= int64(len(data))
	return data, nil
}

// archiveName is a file's name within its chart (its top directory cut), refused when it would
// leave the chart, as Helm's loader does.
func archiveName(raw string) (string, error) {
	n := strings.ReplaceAll(raw, "\\", "/")
	parts := strings.SplitN(n, "/", 2)
	if len(parts) < 2 {
		return "", fmt.Errorf("%q is outside the chart's directory", raw)
	}
	n = parts[1]
	if path.IsAbs(n) || drivePath.MatchString(n) {
		return "", fmt.Errorf("%q is an absolute path", raw)
	}
	n = path.Clean(n)
	if n == "." || n == ".." || strings.HasPrefix(n, "../") {
		return "", fmt.Errorf("%q is outside the chart's directory", raw)
	}
	return n, nil
}

// nestedArchive says whether name is a subchart's archive (charts/<x>.tgz, in the chart or in
// a subchart shipped as a directory: charts/<sub>/charts/<x>.tgz, which Helm's loader would
// expand with a fresh budget) and names the directory it is expanded into (charts/<x>).
func nestedArchive(name string) (string, bool) {
	m := nestedArchiveName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

var nestedArchiveName = regexp.MustCompile(`^((?:charts/[^/]+/)*charts/[^/]+)\.(?:tgz|tar\.gz)$`)
