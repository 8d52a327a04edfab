package plane

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// figurePairs skips the test unless gate is set (a figure of docs/performance.md is a
// measurement, not a test: make bench-report runs it) and gives the pairs asked for in pairsEnv
// (3 by default).
func figurePairs(t *testing.T, gate, pairsEnv, figure string) int {
	t.Helper()
	if os.Getenv(gate) == "" {
		t.Skipf("%s=1 runs figure %s (make bench-report ONLY=%s)", gate, figure, figure)
	}
	if v, err := strconv.Atoi(os.Getenv(pairsEnv)); err == nil && v > 0 {
		return v
	}
	return 3
}

// writePairs writes one line a pair ("subject<TAB>baseline<TAB>subjectFirst", test/bench's
// -pairs format) to the file outEnv names, if it names one.
func writePairs(t *testing.T, outEnv string, lines []string) {
	t.Helper()
	if out := os.Getenv(outEnv); out != "" {
		if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// figureSide is one side of a figure's pair: what it is called in the log, and one run of it
// (k counts the pairs from 0), timed.
type figureSide struct {
	name string
	run  func(k int) time.Duration
}

// alternatingPairs runs pairs of subject and baseline, the subject first in pairs 1, 3, 5..., and
// gives each pair's line for writePairs.
func alternatingPairs(t *testing.T, pairs int, subject, baseline figureSide) []string {
	t.Helper()
	return alternatingRuns(t, pairs, baseline, subject)[0]
}

// alternatingRuns runs, pairs times, each subject and the baseline: the subjects in their order
// and then the baseline in pairs 1, 3, 5..., the reverse in the others. It gives each subject's
// lines for writePairs, each against the same pair's baseline.
func alternatingRuns(t *testing.T, pairs int, baseline figureSide, subjects ...figureSide) [][]string {
	t.Helper()
	lines := make([][]string, len(subjects))
	for k := range pairs {
		subjectFirst := k%2 == 0
		order := append(slices.Clone(subjects), baseline)
		if !subjectFirst {
			slices.Reverse(order)
		}
		took := map[string]time.Duration{}
		for _, side := range order {
			took[side.name] = side.run(k)
		}
		b := took[baseline.name]
		var logged []string
		for i, subject := range subjects {
			s := took[subject.name]
			lines[i] = append(lines[i], fmt.Sprintf("%.2f\t%.2f\t%t", s.Seconds(), b.Seconds(), subjectFirst))
			logged = append(logged, fmt.Sprintf("%s %.2f s", subject.name, s.Seconds()))
		}
		t.Logf("pair %d (%s first): %s, %s %.2f s", k+1, order[0].name, strings.Join(logged, ", "), baseline.name, b.Seconds())
	}
	return lines
}
