package snapshots

import (
	"fmt"
	"testing"
)

// Team a queues 50 snapshots, then team b one: b's is taken second, not 51st; the queue's order
// is kept within a Team; a snapshot that stops waiting (its store is down) holds nobody back.
func TestTurnsShareTheQueueBetweenTeams(t *testing.T) {
	q := newTurns()
	var queue []string // namespace/name in the queue's order
	for i := range 50 {
		queue = append(queue, fmt.Sprintf("a/s%02d", i))
	}
	queue = append(queue, "b/s00", "c/stuck")
	for _, key := range queue {
		q.want(key[:1], key)
	}
	q.done("c", "c/stuck") // dequeued first below: waits for its store, not for a turn
	var taken []string
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		if key == "c/stuck" {
			continue
		}
		if !q.take(key[:1], key) {
			queue = append(queue, key) // requeued
			continue
		}
		taken = append(taken, key)
		q.done(key[:1], key)
	}
	if len(taken) != 51 || taken[0] != "a/s00" || taken[1] != "b/s00" || taken[2] != "a/s01" || taken[50] != "a/s49" {
		t.Errorf("taken in the order %v", taken)
	}
}
