package wakeproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echoBackend sends back every byte it gets; it stands in for kube-apiserver (its answer to a
// ClientHello is the ClientHello).
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
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// clientHello is the start of a TLS ClientHello: a handshake record of type client_hello.
var clientHello = []byte{0x16, 0x03, 0x01, 0x00, 0x2a, 0x01}

// exchange writes b and reads it back from the echo backend.
func exchange(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(b))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("through the listener: %q %v", got, err)
	}
}

// handshake plays a client whose TLS handshake completes: ClientHello, the tenant's answer,
// then more from the client.
func handshake(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	exchange(t, c, clientHello)
	exchange(t, c, []byte("finished"))
	return c
}

// counter records the wishes a listener writes.
type counter struct{ wakes, idles atomic.Int32 }

func (n *counter) target(uid, backend string, ready func() (bool, <-chan struct{})) Target {
	return Target{UID: uid, Backend: backend, Ready: ready,
		Wake: func(context.Context, string) error { n.wakes.Add(1); return nil },
		Idle: func(context.Context, time.Duration) error { n.idles.Add(1); return nil }}
}

func startTestProxy(t *testing.T, target Target, gate *Gate) *Proxy {
	t.Helper()
	p, err := Start("127.0.0.1:0", target, gate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestWakeProxyWakesAndPassesThrough: a ClientHello to a sleeping backend records one wake,
// waits without an answer until the backend serves, then passes bytes both ways untouched.
func TestWakeProxyWakesAndPassesThrough(t *testing.T) {
	pl := &backendState{}
	var n counter
	target := n.target("a", echoBackend(t), pl.serving)
	target.Wake = func(context.Context, string) error {
		n.wakes.Add(1)
		time.AfterFunc(300*time.Millisecond, func() { pl.setReady() })
		return nil
	}
	p := startTestProxy(t, target, NewGate(Limits{}))

	start := time.Now()
	c := handshake(t, p.ln.Addr().String())
	defer c.Close()
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("answered after %s, before the backend served", waited)
	}
	if n := n.wakes.Load(); n != 1 {
		t.Errorf("%d wakes recorded, want 1", n)
	}
}

// TestWakeProxyWakesAgainRightAfterASleep: a cluster woken by a request, then put to sleep a
// few seconds later, is woken again by the next ClientHello at once. Asking again is held back
// for wakeAskAgain only while a wake is under way; once that wake served, the next request while
// asleep is a new wake (P10 found kubectl held until the hold ran out, then retried).
func TestWakeProxyWakesAgainRightAfterASleep(t *testing.T) {
	pl := &backendState{}
	var n counter
	target := n.target("a", echoBackend(t), pl.serving)
	target.Wake = func(context.Context, string) error {
		n.wakes.Add(1)
		time.AfterFunc(200*time.Millisecond, func() { pl.setReady() })
		return nil
	}
	p := startTestProxy(t, target, NewGate(Limits{}))

	handshake(t, p.ln.Addr().String()).Close()
	pl.setAsleep() // hibernated: the stop of a small tenant takes about 2 s, well within wakeAskAgain

	start := time.Now()
	c := handshake(t, p.ln.Addr().String())
	defer c.Close()
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("the second wake answered after %s: it was not asked for", waited)
	}
	if n := n.wakes.Load(); n != 2 {
		t.Errorf("%d wakes recorded, want 2", n)
	}
}

// TestWakeWatchOutlivesAStopRightAfterServing: a watch that saw the tenant serve, which then
// stopped before the watch ended (a ClientHello may have taken the next wake's slots meanwhile,
// counting on this watch), neither tells the gate the tenant woke nor stops watching.
func TestWakeWatchOutlivesAStopRightAfterServing(t *testing.T) {
	p := &Proxy{uid: "a", gate: NewGate(Limits{}), ready: (&backendState{}).serving, watching: true}
	told := false
	if p.endWatch(func(string) { told = true }, true) || told || !p.watching {
		t.Errorf("the watch of a tenant that no longer serves ended (told the gate: %v)", told)
	}
	if !p.endWatch(nil, false) || p.watching {
		t.Error("a watch ended without grace (closed, or timed out) did not end")
	}
}

// TestWakeProxyBareConnectsWakeNothing is the attacker's nc -z loop and port scan: connections
// that close without a byte, or open with something other than a ClientHello, neither wake a
// sleeping cluster nor keep an awake one from its idle sleep.
func TestWakeProxyBareConnectsWakeNothing(t *testing.T) {
	var asleep, awake counter
	gate := NewGate(Limits{})
	sleeping := startTestProxy(t, asleep.target("asleep", echoBackend(t), (&backendState{}).serving), gate)
	serving := startTestProxy(t, awake.target("awake", echoBackend(t), alwaysServing), gate)
	serving.SetIdleTimeout(time.Second)

	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range []*Proxy{sleeping, serving} {
			c, err := net.Dial("tcp", p.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			c, err = net.Dial("tcp", p.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			_, _ = c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
			c.Close()
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := asleep.wakes.Load(); n != 0 {
		t.Errorf("bare connects woke the sleeping cluster %d times", n)
	}
	if n := awake.idles.Load(); n != 1 {
		t.Errorf("the awake cluster wished to sleep %d times under a connect loop, want 1 (connects are not use)", n)
	}
}

// TestWakeProxyUseIsACompletedHandshake: a connection that only sent a ClientHello and was
// answered is not use (the cluster sleeps after its idle time while it is open); one whose
// handshake went on is, for as long as it is open.
func TestWakeProxyUseIsACompletedHandshake(t *testing.T) {
	var n counter
	p := startTestProxy(t, n.target("a", echoBackend(t), alwaysServing), NewGate(Limits{}))
	p.SetIdleTimeout(time.Second)

	hello, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer hello.Close()
	exchange(t, hello, clientHello)
	waitFor(t, "no idle wish while only a ClientHello was answered", func() bool { return n.idles.Load() == 1 })

	held := handshake(t, p.ln.Addr().String())
	time.Sleep(2500 * time.Millisecond)
	if got := n.idles.Load(); got != 1 {
		t.Fatalf("idle wished %d times while a completed handshake was open, want 1", got)
	}
	held.Close()
	waitFor(t, "no idle wish after the established connection closed", func() bool { return n.idles.Load() == 2 })
}

// TestWakeGateBounds: a flood of ClientHellos to many sleeping clusters wakes at most
// MaxWaking at once and MaxAwake in all; one source gets at most PerSource connections before
// their handshakes complete.
func TestWakeGateBounds(t *testing.T) {
	gate := NewGate(Limits{MaxWaking: 2, MaxAwake: 3, PerSource: 8})
	release := make(chan struct{})
	var mu sync.Mutex
	woken := map[string]bool{}
	var proxies []*Proxy
	for i := range 6 {
		uid := fmt.Sprint("t", i)
		pl := &backendState{}
		target := Target{UID: uid, Backend: echoBackend(t), Ready: pl.serving,
			Wake: func(context.Context, string) error {
				mu.Lock()
				woken[uid] = true
				mu.Unlock()
				go func() { <-release; pl.setReady() }()
				return nil
			},
			Idle: func(context.Context, time.Duration) error { return nil }}
		proxies = append(proxies, startTestProxy(t, target, gate))
	}
	flood := func(conns int) (refused int) {
		var wg sync.WaitGroup
		var closed atomic.Int32
		for i := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.Dial("tcp", proxies[i%len(proxies)].ln.Addr().String())
				if err != nil {
					closed.Add(1)
					return
				}
				defer c.Close()
				_, _ = c.Write(clientHello)
				_ = c.SetReadDeadline(time.Now().Add(time.Second))
				if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					closed.Add(1) // closed by the listener, not held for a wake
				}
			}()
		}
		wg.Wait()
		return int(closed.Load())
	}
	// 100 at once from one source: PerSource admits 8, of which those to 2 clusters wait.
	if refused := flood(100); refused < 92 {
		t.Errorf("%d of 100 connections closed, want at least 92 (8 per source)", refused)
	}
	if waking, awake := gate.counts(); waking > 2 || awake > 2 {
		t.Errorf("waking %d, awake %d; want at most 2 waking", waking, awake)
	}
	close(release)
	time.Sleep(200 * time.Millisecond)
	for range 3 {
		flood(12)
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(woken) > 3 {
		t.Errorf("%d clusters woken, want at most MaxAwake 3: %v", len(woken), woken)
	}
	if _, awake := gate.counts(); awake != len(woken) {
		t.Errorf("the gate counts %d awake, %d were woken", awake, len(woken))
	}
}

// TestWakeProxyIdle: the idle wish is written once nothing has been open or sent for the idle
// time, never while a connection is open; a connection after it asks for a wake (a wake while
// going to sleep wins).
func TestWakeProxyIdle(t *testing.T) {
	var n counter
	p := startTestProxy(t, n.target("a", echoBackend(t), alwaysServing), NewGate(Limits{}))
	p.SetIdleTimeout(time.Second)

	held := handshake(t, p.ln.Addr().String())
	time.Sleep(3 * time.Second)
	if got := n.idles.Load(); got != 0 {
		t.Fatalf("idle recorded %d times while a connection was open", got)
	}
	held.Close()
	waitFor(t, "no idle wish after the connection closed", func() bool { return n.idles.Load() == 1 })
	time.Sleep(2500 * time.Millisecond)
	if got := n.idles.Load(); got != 1 {
		t.Errorf("idle recorded again (%d) with no connection in between", got)
	}
	handshake(t, p.ln.Addr().String()).Close()
	if got := n.wakes.Load(); got != 1 {
		t.Errorf("a connection after the idle wish recorded %d wakes, want 1", got)
	}
}

func alwaysServing() (bool, <-chan struct{}) {
	ch := make(chan struct{})
	close(ch)
	return true, ch
}

// TestPlaneReadyChannel: the channel serving returns is closed exactly while kube-apiserver is
// seen ready, and a new one is handed out once it is not.
// closed says whether ch is closed, without waiting.
// TestWakeTimeoutFreesTheAwakeSlot: a tenant that never serves after a wake must not hold its
// awake-by-request slot for good (one per MaxAwake would starve every other cluster's wake).
func TestWakeTimeoutFreesTheAwakeSlot(t *testing.T) {
	defer func(d time.Duration) { wakeWait = d }(wakeWait)
	wakeWait = 200 * time.Millisecond
	gate := NewGate(Limits{MaxAwake: 1})
	var n counter
	never := func() (bool, <-chan struct{}) { return false, make(chan struct{}) }
	p := startTestProxy(t, n.target("broken", echoBackend(t), never), gate)
	c, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(clientHello); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection was not closed at the wake's timeout: %v", err)
	}
	waitFor(t, "the wake's timeout to free the slot", func() bool { _, awake := gate.counts(); return awake == 0 })
	if err := gate.startWake("other", "team-b"); err != nil {
		t.Errorf("another cluster cannot wake after the broken one timed out: %v", err)
	}
}

// TestWakeGateSharesAwakeSlotsByTeam: a client without credentials that wakes (and completes
// handshakes with) every cluster of one Team holds at most MaxAwakePerTeam of the MaxAwake
// slots; another Team's clusters still wake.
func TestWakeGateSharesAwakeSlotsByTeam(t *testing.T) {
	gate := NewGate(Limits{MaxAwake: 16, MaxAwakePerTeam: 4})
	woke := 0
	for i := range 16 {
		uid := fmt.Sprint("a", i)
		if gate.startWake(uid, "team-a") == nil {
			gate.woke(uid)
			woke++
		}
	}
	if woke != 4 {
		t.Errorf("one Team's clusters took %d awake slots, want MaxAwakePerTeam 4", woke)
	}
	if err := gate.startWake("b0", "team-b"); err != nil {
		t.Errorf("another Team's cluster cannot wake: %v", err)
	}
	gate.slept("a0")
	if err := gate.startWake("a99", "team-a"); err != nil {
		t.Errorf("a slot freed by a cluster of team-a is not given back to it: %v", err)
	}
}

// A client with an IPv6 /64 (what one home or VM gets) sends each connection from another of
// its 2^64 addresses: counted by address, none reached the per-source bound. Sources are counted
// by /64 for IPv6 (by address for IPv4, an IPv4-mapped address as its IPv4 one).
func TestAttackWakePerSourceByIPv6Prefix(t *testing.T) {
	gate := NewGate(Limits{PerSource: 4})
	admitted := 0
	for i := range 10 {
		if _, err := gate.admit(fmt.Sprintf("[2001:db8:1:2::%x]:443", i+1)); err == nil {
			admitted++
		}
	}
	if admitted != 4 {
		t.Errorf("%d of 10 connections from one /64 admitted, want 4 (the per-source bound)", admitted)
	}
	if _, err := gate.admit("[2001:db8:1:3::1]:443"); err != nil {
		t.Errorf("another /64 refused: %v", err)
	}
	for i := range 4 {
		if _, err := gate.admit(fmt.Sprintf("192.0.2.%d:443", i+1)); err != nil {
			t.Errorf("IPv4 address %d refused: %v (IPv4 sources are counted by address)", i+1, err)
		}
	}
	for range 3 {
		if _, err := gate.admit("[::ffff:198.51.100.7]:443"); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = gate.admit("198.51.100.7:443")
	if _, err := gate.admit("[::ffff:198.51.100.7]:443"); err == nil {
		t.Error("an IPv4 address, mapped and not, admitted past the bound")
	}
}

// backendState stands in for a tenant plane's readiness: whether kube-apiserver serves, and a
// channel closed once it does.
type backendState struct {
	mu    sync.Mutex
	ready bool
	ch    chan struct{}
}

func (b *backendState) serving() (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ready, b.ch
}

// setAsleep makes it stop serving (a hibernation).
func (b *backendState) setAsleep() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ready {
		b.ready, b.ch = false, make(chan struct{})
	}
}

// setReady makes it serve.
func (b *backendState) setReady() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	if !b.ready {
		b.ready = true
		close(b.ch)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
