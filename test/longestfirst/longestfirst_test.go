package longestfirst

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests that arrive together in any order start longest first, ties in their arrival order.
func TestLongestFirst(t *testing.T) {
	if got, want := startOrder(1, []time.Duration{1, 5, 3, 5, 2, 4}), []int{1, 3, 5, 2, 4, 0}; !slices.Equal(got, want) {
		t.Errorf("started %v, want %v", got, want)
	}
}

// Never more than n at once, and every one starts.
func TestAtMostNAtOnce(t *testing.T) {
	var mu sync.Mutex
	running, most := 0, 0
	g := New(2)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			g.Acquire(time.Duration(i) * time.Minute)
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			g.Release()
		})
	}
	wg.Wait()
	if most != 2 {
		t.Errorf("at most %d ran at once on 2 slots", most)
	}
}

// startOrder is the order in which tests expected to take expects (minutes; indexes in arrival
// order, all inside Settle) start on a gate of n slots, each running until the next starts.
func startOrder(n int, expects []time.Duration) []int {
	g := New(n)
	started := make(chan int)
	for i, e := range expects {
		go func() {
			g.Acquire(e * time.Minute)
			started <- i
		}()
		time.Sleep(10 * time.Millisecond)
	}
	var order []int
	for range expects {
		order = append(order, <-started)
		g.Release()
	}
	return order
}

// A test arriving once the gate has settled starts at once when a slot is free (after Settle,
// the gate's only wait).
func TestLateArrivalStarts(t *testing.T) {
	g := New(1)
	g.Acquire(time.Minute)
	g.Release()
	start := time.Now()
	g.Acquire(time.Second)
	if waited := time.Since(start); waited > 10*Settle {
		t.Errorf("a late test waited %s on a free slot", waited)
	}
}

// Summary lists the tests that held a slot longest first, each with its expectation.
func TestSummary(t *testing.T) {
	g := New(2)
	for _, tc := range []struct {
		name  string
		sleep time.Duration
	}{{"short", time.Millisecond}, {"long", 30 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			g.Parallel(t, time.Minute)
			time.Sleep(tc.sleep)
		})
	}
	t.Cleanup(func() {
		lines := strings.Split(strings.TrimSpace(g.Summary(1)), "\n")
		if len(lines) != 1 || !strings.HasSuffix(lines[0], "TestSummary/long") || !strings.Contains(lines[0], "(expected 1m0s)") {
			t.Errorf("Summary(1) = %q, want the long one only, with its expectation", lines)
		}
	})
}
