package localports

import (
	"fmt"
	"testing"
)

func TestAllocator(t *testing.T) {
	p, err := NewAllocator(Range{Min: 30000, Max: 30002})
	if err != nil {
		t.Fatal(err)
	}
	p.Available = func(int) bool { return true } // whatever else runs on this machine
	if !p.Claim(30001, "a") || p.Claim(30001, "b") || !p.Claim(30001, "a") {
		t.Fatal("claim")
	}
	seen := map[int]bool{}
	for _, uid := range []string{"b", "c"} {
		port, err := p.Allocate(uid)
		if err != nil || port == 30001 || seen[port] {
			t.Fatalf("allocate(%s) = %d, %v", uid, port, err)
		}
		seen[port] = true
	}
	if _, err := p.Allocate("d"); err == nil {
		t.Error("allocated past the end of the range")
	}
	p.Release(30001, "someone-else")
	if _, err := p.Allocate("d"); err == nil {
		t.Error("a release by another tenant freed the port")
	}
	p.Release(30001, "a")
	if port, err := p.Allocate("d"); err != nil || port != 30001 {
		t.Errorf("after release: %d, %v", port, err)
	}
}

func TestAllocatorSkipsTheEphemeralRange(t *testing.T) {
	eph := Ephemeral()
	if _, err := NewAllocator(Range{Min: eph.Min, Max: eph.Min + 10}); err == nil {
		t.Errorf("a range inside the ephemeral range %s was accepted", eph)
	}
	// Four ports outside the ephemeral range, a hundred inside it.
	r := Range{Min: eph.Min - 4, Max: eph.Min + 100}
	if eph.Min < 1030 {
		r = Range{Min: eph.Max - 100, Max: eph.Max + 4}
	}
	p, err := NewAllocator(r)
	if err != nil {
		t.Fatal(err)
	}
	p.Available = func(int) bool { return true }
	got := map[int]bool{}
	for i := range 4 {
		port, err := p.Allocate(fmt.Sprint("tenant-", i))
		if err != nil {
			t.Fatal(err)
		}
		got[port] = true
		if eph.Contains(port) {
			t.Fatalf("allocated %d, inside the ephemeral range %s", port, eph)
		}
	}
	if port, err := p.Allocate("one-too-many"); err == nil {
		t.Errorf("allocated %d: only 4 ports lie outside the ephemeral range (%v taken)", port, got)
	}
}
