// Package longestfirst orders a suite's parallel tests: each waits for one of a fixed number of
// slots, and a free slot goes to the waiting test expected to take longest. Go's own gate
// (-parallel) starts parallel tests in no set order, so a test of six minutes started last keeps
// the suite running minutes after the others have finished; longest first finishes a batch
// soonest. The suite runs with Go's gate open wider than its tests (test/e2e/plane: -parallel 64) for
// this order to decide; under a narrower one the order is Go's again (never a deadlock: a slot
// goes to a test that arrived).
package longestfirst

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Settle is how long the gate waits after the last test arrived before it hands out slots: a
// suite's parallel tests are released together once its serial ones end, and the longest must
// have arrived before a slot goes to whichever came first.
const Settle = 300 * time.Millisecond

// Gate hands its slots to the waiting tests, the longest expected first, equal ones in the
// order they arrived.
type Gate struct {
	mu      sync.Mutex
	free    int
	waiting []*waiter // longest expected first
	settled bool      // no test has arrived for Settle
	timer   *time.Timer
	ran     []ran // each test's time in its slot, for Summary
}

type ran struct {
	name         string
	expect, took time.Duration
}

type waiter struct {
	expect time.Duration
	ready  chan struct{}
}

// New is a gate of n slots.
func New(n int) *Gate { return &Gate{free: n} }

// Parallel is t.Parallel, then a slot of g held until t and its cleanups are done. expect is
// about how long the test takes beside the others: an order, not a bound (nothing is timed
// against it).
func (g *Gate) Parallel(t *testing.T, expect time.Duration) {
	t.Helper()
	t.Parallel()
	g.Acquire(expect)
	start := time.Now()
	t.Cleanup(func() { // registered first: runs after the test's other cleanups
		g.mu.Lock()
		g.ran = append(g.ran, ran{name: t.Name(), expect: expect, took: time.Since(start)})
		g.mu.Unlock()
		g.Release()
	})
}

// Summary lists the n tests that held a slot longest, with what each was expected to take: where
// a suite's time goes, and which expectations to correct.
func (g *Gate) Summary(n int) string {
	g.mu.Lock()
	byTook := slices.Clone(g.ran)
	g.mu.Unlock()
	slices.SortFunc(byTook, func(a, b ran) int { return int(b.took - a.took) })
	var out strings.Builder
	for _, r := range byTook[:min(n, len(byTook))] {
		fmt.Fprintf(&out, "%8s  (expected %s)  %s\n", r.took.Round(time.Second), r.expect, r.name)
	}
	return out.String()
}

// Acquire waits for a slot; the gate hands them out longest expected first.
func (g *Gate) Acquire(expect time.Duration) {
	w := &waiter{expect: expect, ready: make(chan struct{})}
	g.mu.Lock()
	// After every waiter expected as long or longer: ties keep their arrival order.
	i := len(g.waiting)
	for j, o := range g.waiting {
		if o.expect < expect {
			i = j
			break
		}
	}
	g.waiting = slices.Insert(g.waiting, i, w)
	g.settled = false
	if g.timer == nil {
		g.timer = time.AfterFunc(Settle, g.settle)
	} else {
		g.timer.Reset(Settle)
	}
	g.mu.Unlock()
	<-w.ready
}

// Release frees a slot.
func (g *Gate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.free++
	g.grant()
}

func (g *Gate) settle() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.settled = true
	g.grant()
}

// grant starts the longest waiting while slots are free; g.mu is held.
func (g *Gate) grant() {
	for g.settled && g.free > 0 && len(g.waiting) > 0 {
		w := g.waiting[0]
		g.waiting = g.waiting[1:]
		g.free--
		close(w.ready)
	}
}
