package controlplane

import "testing"

// TestFirstStartHeld: while a first start is held, the listener does not pass connections
// through even once kube-apiserver serves; the release wakes its waiters and is for good.
func TestFirstStartHeld(t *testing.T) {
	pl := &plane{}
	pl.holdFirstStart()
	pl.mu.Lock()
	pl.setReadyLocked(true)
	pl.mu.Unlock()
	ok, ch := pl.admitting()
	if ok || closed(ch) {
		t.Fatalf("held and serving: admitting %v, channel closed %v", ok, closed(ch))
	}
	pl.release()
	if !closed(ch) {
		t.Fatal("the channel a waiter holds is not closed on release")
	}
	if ok, _ := pl.admitting(); !ok {
		t.Fatal("released and serving, but not admitting")
	}
	pl.holdFirstStart()
	if ok, _ := pl.admitting(); !ok {
		t.Fatal("a released plane is held again")
	}
}
