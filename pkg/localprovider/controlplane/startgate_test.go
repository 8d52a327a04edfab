package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

// gatedPlane is a plane whose notify counts its turns.
func gatedPlane(g *startGate, turns *int) *plane {
	return &plane{gate: g, notify: func() { *turns++ }}
}

// At most size start at once; the others wait in line, and each freed slot goes to the first in
// line (queued), not to whoever asks next.
func TestStartGateLetsSizeStartInTurn(t *testing.T) {
	g := newStartGate(2)
	var turns [4]int
	pls := []*plane{gatedPlane(g, &turns[0]), gatedPlane(g, &turns[1]), gatedPlane(g, &turns[2]), gatedPlane(g, &turns[3])}
	for i, want := range []bool{true, true, false, false} {
		if got := g.acquire(pls[i]); got != want {
			t.Fatalf("start %d: acquire = %v, want %v", i, got, want)
		}
	}
	if !g.acquire(pls[0]) {
		t.Error("a holder asking again lost its slot")
	}
	g.release(pls[0]) // ready
	if turns[2] != 1 || turns[3] != 0 {
		t.Errorf("turns after a release = %v, want the first in line's (2) queued", turns)
	}
	if g.acquire(pls[3]) {
		t.Error("the second in line took the slot handed to the first")
	}
	if !g.acquire(pls[2]) {
		t.Error("the first in line did not get the freed slot")
	}
	g.release(pls[3]) // stopped while waiting: leaves the line, frees nothing
	if h, w := g.counts(); h != 2 || w != 0 {
		t.Errorf("holding %d, waiting %d; want 2 and 0", h, w)
	}
}

// A start that never answers keeps its slot startSlotMax at most: a broken tenant does not keep
// every other one from starting.
func TestStartGateFreesAStartThatNeverAnswers(t *testing.T) {
	g := newStartGate(1)
	now := time.Now()
	g.now = func() time.Time { return now }
	var turns [2]int
	stuck, next := gatedPlane(g, &turns[0]), gatedPlane(g, &turns[1])
	if !g.acquire(stuck) || g.acquire(next) {
		t.Fatal("the first start should hold the only slot")
	}
	now = now.Add(startSlotMax + time.Second)
	if !g.acquire(next) {
		t.Error("the slot of a start older than startSlotMax was not freed")
	}
}

// A plane refused a slot starts no kube-apiserver (nor its controllers, which wait for it), and
// starts it once its turn comes; its readiness frees the slot for the next.
func TestEnsureStartsKubeAPIServerInTurn(t *testing.T) {
	g := newStartGate(1)
	var turns [2]int
	dirA, dirB := t.TempDir(), t.TempDir()
	a := &plane{rec: tenantRecord{UID: "a", Port: 1}, paths: tenantPaths{dir: dirA}, notify: func() { turns[0]++ }, gate: g}
	b := &plane{rec: tenantRecord{UID: "b", Port: 1}, paths: tenantPaths{dir: dirB}, notify: func() { turns[1]++ }, gate: g}
	defer a.kill()
	defer b.kill()
	ctx := context.Background()
	a.ensure(ctx, "v1.36.3", nil, []process.Spec{stoppingSpec(dirA, componentAPIServer)})
	b.ensure(ctx, "v1.36.3", nil, []process.Spec{stoppingSpec(dirB, componentAPIServer)})
	if !a.running() || b.running() {
		t.Fatalf("running: a %v, b %v; want only a (one slot)", a.running(), b.running())
	}
	if !g.waits(b) {
		t.Error("b is not in line")
	}
	a.mu.Lock()
	a.setReadyLocked(true) // a's kube-apiserver answers /readyz
	a.mu.Unlock()
	if turns[1] == 0 {
		t.Error("b was not queued when a's slot was freed")
	}
	b.ensure(ctx, "v1.36.3", nil, []process.Spec{stoppingSpec(dirB, componentAPIServer)})
	if !b.running() {
		t.Error("b did not start in its turn")
	}
}
