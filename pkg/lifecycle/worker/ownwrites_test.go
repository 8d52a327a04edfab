package worker

import "testing"

// A copy a controller's own writes replaced is stale until the informer shows another version;
// then the record goes. A write that changed nothing marks nothing stale.
func TestOwnWritesTellStaleCopies(t *testing.T) {
	var w OwnWrites
	if w.Stale("a", "1") {
		t.Error("nothing written: stale")
	}
	w.Wrote("a", "1", "2")
	w.Wrote("a", "2", "3") // a second write before the informer saw the first
	if !w.Stale("a", "1") || !w.Stale("a", "2") {
		t.Error("copies the writes replaced: not stale")
	}
	if w.Stale("b", "1") {
		t.Error("another object: stale")
	}
	if w.Stale("a", "3") {
		t.Error("the copy of the last write: stale")
	}
	if w.Stale("a", "1") {
		t.Error("once the current copy was seen, the record should be gone")
	}
	w.Wrote("a", "3", "3")
	if w.Stale("a", "3") {
		t.Error("a write that changed nothing made its own copy stale")
	}
	w.Wrote("a", "3", "4")
	w.Forget("a")
	if w.Stale("a", "3") {
		t.Error("forgotten: stale")
	}
}
