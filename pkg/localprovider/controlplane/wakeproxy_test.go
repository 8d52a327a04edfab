package controlplane

import (
	"bufio"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// echoBackend answers each line with the same line; it stands in for kube-apiserver.
func echoBackend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					_, _ = c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestWakeProxyWakesAndPassesThrough: a connection to a sleeping backend records one wake,
// waits without an answer until the backend serves, then passes bytes both ways untouched.
func TestWakeProxyWakesAndPassesThrough(t *testing.T) {
	backend := echoBackend(t)
	pl := &plane{}
	var wakes atomic.Int32
	p, err := startWakeProxy("127.0.0.1:0", backend, pl.serving,
		func(context.Context, string) error {
			wakes.Add(1)
			time.AfterFunc(300*time.Millisecond, func() { pl.mu.Lock(); pl.setReadyLocked(true); pl.mu.Unlock() })
			return nil
		},
		func(context.Context, time.Duration) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	start := time.Now()
	c, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("through the proxy: %q %v", line, err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("answered after %s, before the backend served", waited)
	}
	if n := wakes.Load(); n != 1 {
		t.Errorf("%d wakes recorded, want 1", n)
	}
}

// TestWakeProxyIdle: the idle wish is written once nothing has been open or sent for the idle
// time, never while a connection is open; a connection after it asks for a wake (a wake while
// going to sleep wins).
func TestWakeProxyIdle(t *testing.T) {
	backend := echoBackend(t)
	var idles, wakes atomic.Int32
	p, err := startWakeProxy("127.0.0.1:0", backend, alwaysServing,
		func(context.Context, string) error { wakes.Add(1); return nil },
		func(context.Context, time.Duration) error { idles.Add(1); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	p.setIdleTimeout(time.Second)

	held, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if n := idles.Load(); n != 0 {
		t.Fatalf("idle recorded %d times while a connection was open", n)
	}
	held.Close()
	deadline := time.Now().Add(5 * time.Second)
	for idles.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := idles.Load(); n != 1 {
		t.Fatalf("idle recorded %d times after the connection closed, want 1", n)
	}
	time.Sleep(2500 * time.Millisecond)
	if n := idles.Load(); n != 1 {
		t.Errorf("idle recorded again (%d) with no connection in between", n)
	}
	c, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("x\n"))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := wakes.Load(); n != 1 {
		t.Errorf("a connection after the idle wish recorded %d wakes, want 1", n)
	}
}

func alwaysServing() (bool, <-chan struct{}) {
	ch := make(chan struct{})
	close(ch)
	return true, ch
}

// TestPlaneReadyChannel: the channel serving returns is closed exactly while kube-apiserver is
// seen ready, and a new one is handed out once it is not.
func TestPlaneReadyChannel(t *testing.T) {
	pl := &plane{}
	ready, ch := pl.serving()
	if ready || closed(ch) {
		t.Fatalf("a new plane: ready %v, channel closed %v", ready, closed(ch))
	}
	pl.mu.Lock()
	pl.setReadyLocked(true)
	pl.setReadyLocked(true) // twice: no double close
	pl.mu.Unlock()
	if !closed(ch) {
		t.Fatal("the channel a waiter holds is not closed once ready")
	}
	pl.mu.Lock()
	pl.setReadyLocked(false)
	pl.mu.Unlock()
	if ready, ch2 := pl.serving(); ready || closed(ch2) {
		t.Fatalf("after not ready: ready %v, channel closed %v", ready, closed(ch2))
	}
}

// closed says whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
