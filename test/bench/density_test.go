package main

import "testing"

// A -density-ran cluster starts awake with a worker and wake on request; a plain one asleep with none.
func TestDensityClusterRan(t *testing.T) {
	ran := densityCluster("d-0001", "v1.35.4", true)
	if h := ran.Spec.Hibernation; h == nil || h.Hibernated || !h.WakeOnRequest || ran.Spec.Workers.Replicas != 1 {
		t.Fatalf("a cluster that runs once: hibernation %+v, %d workers", ran.Spec.Hibernation, ran.Spec.Workers.Replicas)
	}
	asleep := densityCluster("d-0001", "v1.35.4", false)
	if h := asleep.Spec.Hibernation; h == nil || !h.Hibernated || !h.WakeOnRequest || asleep.Spec.Workers.Replicas != 0 {
		t.Fatalf("a cluster created asleep: hibernation %+v, %d workers", asleep.Spec.Hibernation, asleep.Spec.Workers.Replicas)
	}
}
