package controlplane

import (
	"slices"
	"sync"
	"time"
)

// startGate bounds how many tenant kube-apiservers start at once on this host. A start is a few
// CPU-seconds of parallel work (the OpenAPI documents, the bootstrap RBAC written object by
// object) with deadlines of its own: a post-start hook that has not finished in 30 s ends the
// process. Ten started together beside 90 idle tenants shared one free core, none finished in
// time, and each start was lost and tried again (issue 40's capacity run); taken a few at a
// time, each has the CPU to finish. A start holds its slot until kube-apiserver answers /readyz,
// it is stopped, or startSlotMax passes (a tenant that never starts must not keep others out).
type startGate struct {
	size    int
	mu      sync.Mutex
	holders map[*plane]time.Time
	waiting []*plane
	now     func() time.Time
}

// startSlotMax is the longest a start holds its slot: several cold starts on a loaded host.
const startSlotMax = 2 * time.Minute

// startSlotRetry is how soon a tenant waiting for a slot looks again, besides being queued when
// a slot is handed to it.
const startSlotRetry = 5 * time.Second

func newStartGate(size int) *startGate {
	return &startGate{size: max(size, 1), holders: map[*plane]time.Time{}, now: time.Now}
}

// acquire says whether pl may start its kube-apiserver now: it holds a slot, or takes a free one.
// Otherwise pl waits in line, and its tenant is queued when a slot is handed to it. A nil gate
// lets every start through.
func (g *startGate) acquire(pl *plane) bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expireLocked()
	if _, ok := g.holders[pl]; ok {
		return true
	}
	if len(g.holders) < g.size && (len(g.waiting) == 0 || g.waiting[0] == pl) {
		g.waiting = slices.DeleteFunc(g.waiting, func(w *plane) bool { return w == pl })
		g.holders[pl] = g.now()
		return true
	}
	if !slices.Contains(g.waiting, pl) {
		g.waiting = append(g.waiting, pl)
	}
	return false
}

// release frees pl's slot (or its place in line) and tells the next in line.
func (g *startGate) release(pl *plane) {
	if g == nil {
		return
	}
	g.mu.Lock()
	_, held := g.holders[pl]
	delete(g.holders, pl)
	g.waiting = slices.DeleteFunc(g.waiting, func(w *plane) bool { return w == pl })
	next := g.nextLocked(held)
	g.mu.Unlock()
	if next != nil {
		next.notify()
	}
}

// expireLocked frees the slots held longer than startSlotMax.
func (g *startGate) expireLocked() {
	for pl, since := range g.holders {
		if g.now().Sub(since) > startSlotMax {
			delete(g.holders, pl)
		}
	}
}

// nextLocked is the first in line when a slot was freed and one is free.
func (g *startGate) nextLocked(freed bool) *plane {
	if !freed || len(g.waiting) == 0 || len(g.holders) >= g.size {
		return nil
	}
	return g.waiting[0]
}

// waits says whether pl is in line for a slot.
func (g *startGate) waits(pl *plane) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Contains(g.waiting, pl)
}

// counts is how many slots are held, and how many wait.
func (g *startGate) counts() (holding, waiting int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.holders), len(g.waiting)
}
