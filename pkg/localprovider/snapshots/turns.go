package snapshots

import "sync"

// turns shares the snapshot queue fairly between Teams (a TenantCluster's namespace): a Team
// whose snapshot is due takes only if no other Team with a snapshot waiting had its last turn
// longer ago. One Team's hundreds of snapshots thus take one turn in each round, not every turn
// until they are all taken; within a Team they go in the queue's order. A snapshot waits for
// its turn from when the informer sees it until it is taken or gives up waiting for anything
// else (its cluster's restore, its datastore, the store), so a snapshot stuck on those holds
// no other Team back.
type turns struct {
	mu      sync.Mutex
	waiting map[string]map[string]bool // Team -> snapshots (namespace/name) waiting for a take
	last    map[string]int64           // Team -> the round of its last take
	round   int64
}

func newTurns() *turns {
	return &turns{waiting: map[string]map[string]bool{}, last: map[string]int64{}}
}

// want records that key, of team, waits for a take.
func (t *turns) want(team, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waiting[team] == nil {
		t.waiting[team] = map[string]bool{}
	}
	t.waiting[team][key] = true
}

// done records that key no longer waits (taken, failed, deleted, or waiting for something else).
func (t *turns) done(team, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.waiting[team], key)
	if len(t.waiting[team]) == 0 {
		delete(t.waiting, team)
	}
}

// take says whether key, of team, may be taken now, and if so counts the turn: no other Team
// waits that had its last turn before team's.
func (t *turns) take(team, key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for other := range t.waiting {
		if other != team && t.last[other] < t.last[team] {
			return false
		}
	}
	t.round++
	t.last[team] = t.round
	return true
}
