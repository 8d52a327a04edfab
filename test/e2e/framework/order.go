package framework

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/test/longestfirst"
)

// order runs the parallel tests in BUTLER_E2E_PARALLEL slots (4 unless set), the longest first
// (test/longestfirst; make test-e2e opens Go's own -parallel gate wider so that this one decides).
var order = longestfirst.New(parallelSlots())

func parallelSlots() int {
	if n, err := strconv.Atoi(os.Getenv("BUTLER_E2E_PARALLEL")); err == nil && n > 0 {
		return n
	}
	return 4
}

// LongestFirst is t.Parallel in that order: expect is about how long t takes in the suite's parallel
// phase, beside the others (an order, not a bound).
func LongestFirst(t *testing.T, expect time.Duration) {
	t.Helper()
	order.Parallel(t, expect)
}
