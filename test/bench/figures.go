package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// figure is one figure of docs/performance.md as measured: every pair's subject and baseline
// run, in the order they ran. `make bench-report` runs each figure's pairs (one bench process a
// pair, each appending to the figure's file under test/bench/figures) and then -report
// renders every file into the document; nothing in it is typed by hand. The files are committed
// with the document: they are its data, and what a report of one figure renders the others from.
type figure struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	What     string `json:"what"`     // what the subject does, and where each clock starts and stops
	Baseline string `json:"baseline"` // the same work without the subject
	Subject  string `json:"subjectName"`
	Base     string `json:"baselineName"`
	Unit     string `json:"unit"`
	Better   string `json:"better"` // "lower" or "higher": how to read the ratio
	Command  string `json:"command"`
	// NoRatio, when set, says why the sides are given side by side and no ratio is taken (a
	// baseline below what its measure resolves).
	NoRatio string `json:"noRatio,omitempty"`

	Runs []pair `json:"runs"`
	// Work counts the objects each side had made when its clock stopped, by kind: the proof that
	// subject and baseline did the same work (sameWork), from every pair.
	Work  map[string]map[string]int `json:"work,omitempty"`
	Notes []string                  `json:"notes,omitempty"`

	Commit  string `json:"commit"`
	Machine string `json:"machine"`
}

// pair is one subject run and one baseline run, back to back on equally fresh planes.
type pair struct {
	Subject, Baseline float64
	SubjectFirst      bool
	Started           time.Time
	Took              float64 // seconds, both runs with their planes
	Load              string  // the load average before the pair
}

// ratios are the pairs' ratios, or why there are none.
func (f *figure) ratios() ([]float64, error) {
	if f.NoRatio != "" {
		return nil, errors.New(f.NoRatio)
	}
	return pairRatios(f.subjects(), f.baselines())
}

func (f *figure) subjects() []float64  { return f.column(func(p pair) float64 { return p.Subject }) }
func (f *figure) baselines() []float64 { return f.column(func(p pair) float64 { return p.Baseline }) }

func (f *figure) column(of func(pair) float64) []float64 {
	out := make([]float64, len(f.Runs))
	for i, p := range f.Runs {
		out[i] = of(p)
	}
	return out
}

// loadFigure reads a figure's file; fresh (the first pair of a report) starts it again from def.
func loadFigure(path string, fresh bool, def figure) (*figure, error) {
	if fresh {
		return &def, nil
	}
	var f figure
	if found, err := readJSON(path, &f); !found || err != nil {
		if err != nil {
			return nil, err
		}
		return &def, nil
	}
	if f.ID != def.ID {
		return nil, fmt.Errorf("%s holds figure %s, not %s", path, f.ID, def.ID)
	}
	return &f, nil
}

func (f *figure) save(path string) error { return saveJSON(path, f) }

// readJSON decodes the file at path into v; found is false when there is no such file.
func readJSON(path string, v any) (found bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

// saveJSON writes v, indented, to path, making its directory.
func saveJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// addWork records what one side made in one run; a later run that made other counts is kept
// too (as "side, run k"), so sameWork sees every run.
func (f *figure) addWork(side string, counts map[string]int) {
	if f.Work == nil {
		f.Work = map[string]map[string]int{}
	}
	key := side
	for k := 2; f.Work[key] != nil && !maps.Equal(f.Work[key], counts); k++ {
		key = fmt.Sprintf("%s, run %d", side, k)
	}
	f.Work[key] = counts
}

// sameWork says where the sides' counts differ, kind by kind: empty when every run of every
// side made the same objects.
func sameWork(work map[string]map[string]int) []string {
	kinds := map[string]bool{}
	for _, counts := range work {
		for k := range counts {
			kinds[k] = true
		}
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		seen := map[int][]string{}
		for side, counts := range work {
			seen[counts[k]] = append(seen[counts[k]], side)
		}
		if len(seen) > 1 {
			var parts []string
			for _, n := range slices.Sorted(maps.Keys(seen)) {
				sides := seen[n]
				sort.Strings(sides)
				parts = append(parts, fmt.Sprintf("%d (%s)", n, strings.Join(sides, ", ")))
			}
			diffs = append(diffs, k+": "+strings.Join(parts, " against "))
		}
	}
	return diffs
}

// machine describes where the figures ran: CPUs, memory, kernel, Go.
func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%d CPUs (%s), %.1f GiB memory, Linux %s, %s", runtime.NumCPU(), model,
		float64(memTotal())/(1<<30), strings.TrimSpace(string(kernel)), runtime.Version())
}

// unit renders v in the figure's unit.
func (f *figure) unit(v float64) string {
	switch f.Unit {
	case "s":
		return strconv.FormatFloat(v, 'f', 2, 64) + " s"
	case "ms":
		return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
	case "":
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + f.Unit
	}
}
