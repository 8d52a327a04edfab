package plane

import (
	"fmt"
	"os"
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
	var lines []string
	for k := range pairs {
		subjectFirst := k%2 == 0
		order := []figureSide{subject, baseline}
		if !subjectFirst {
			order = []figureSide{baseline, subject}
		}
		took := map[string]time.Duration{}
		for _, side := range order {
			took[side.name] = side.run(k)
		}
		s, b := took[subject.name], took[baseline.name]
		lines = append(lines, fmt.Sprintf("%.2f\t%.2f\t%t", s.Seconds(), b.Seconds(), subjectFirst))
		t.Logf("pair %d (%s first): %s %.2f s, %s %.2f s", k+1, order[0].name, subject.name, s.Seconds(), baseline.name, b.Seconds())
	}
	return lines
}
