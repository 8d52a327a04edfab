package process

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// OnSignal is a context that ends on the first SIGINT or SIGTERM, and that signal's number, for
// the commands that supervise a plane (butler-localplane, butler-cluster). Later signals are caught
// and dropped: a second one must not cut the stop short (timeout signals make and its process
// group, so two SIGTERMs reach the command).
func OnSignal() (context.Context, *atomic.Int32) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	var got atomic.Int32
	go func() {
		s := <-sigs
		got.Store(int32(s.(syscall.Signal)))
		cancel()
	}()
	return ctx, &got
}
