package process

import (
	"syscall"
	"testing"
	"time"
)

// TestOnSignal: the first SIGTERM ends the context and is recorded; a second one is dropped, not
// the default action (which would end this test's process).
func TestOnSignal(t *testing.T) {
	ctx, got := OnSignal()
	for range 2 {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the context did not end on SIGTERM")
		}
	}
	time.Sleep(100 * time.Millisecond)
	if s := got.Load(); s != int32(syscall.SIGTERM) {
		t.Errorf("signal %d, want SIGTERM (%d)", s, syscall.SIGTERM)
	}
}
