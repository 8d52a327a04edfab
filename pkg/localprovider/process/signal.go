package process

import (
	"context"
	"fmt"
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

// Main is the whole main of a command configured by its environment alone (butler-localplane,
// butler-cluster): no arguments (--help prints usage), its options from fromEnv (exit 2 when
// they are wrong), then run with a log whose lines start with prefix, until it returns or a
// SIGINT or SIGTERM ends it (exit 128 plus the signal; 1 when run failed).
func Main[O any](prefix, usage string, fromEnv func(root string, getenv func(string) string) (O, error),
	run func(context.Context, O, func(format string, args ...any)) error) {
	if len(os.Args) > 1 {
		fmt.Fprint(os.Stderr, usage)
		if os.Args[1] == "-h" || os.Args[1] == "--help" {
			os.Exit(0)
		}
		os.Exit(2)
	}
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, prefix+": "+format+"\n", args...) }
	root, err := os.Getwd()
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	o, err := fromEnv(root, os.Getenv)
	if err != nil {
		logf("%v", err)
		os.Exit(2)
	}
	ctx, signalled := OnSignal()
	err = run(ctx, o, logf)
	if s := signalled.Load(); s != 0 {
		os.Exit(128 + int(s))
	}
	if err != nil {
		os.Exit(1)
	}
}
