package plane

import (
	"os"
	"strconv"
	"strings"
	"testing"
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
