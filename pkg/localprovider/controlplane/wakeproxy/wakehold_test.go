package wakeproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// tlsBackend is a kube-apiserver stand-in that answers GET /version over TLS.
func tlsBackend(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"35","gitVersion":"v1.35.4"}`))
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// wakesAfter is a sleeping plane whose wake makes it serve after d.
func wakesAfter(t *testing.T, d time.Duration, n *counter, backend string) (*backendState, Target) {
	t.Helper()
	pl := &backendState{}
	target := n.target("a", backend, pl.serving)
	target.Wake = func(context.Context, string) error {
		n.wakes.Add(1)
		time.AfterFunc(d, func() { pl.setReady() })
		return nil
	}
	return pl, target
}

// TestWakeLongerThanTheClientsHandshakeTimeout is kubectl on a loaded machine: client-go gives a
// TLS handshake 10 s (its transport's TLSHandshakeTimeout) and does not retry a GET that hit it,
// so a ClientHello held unanswered through a longer wake failed kubectl ("net/http: TLS
// handshake timeout"). Scaled down here: the client's handshake timeout is 1 s, the wake 2.5 s;
// the GET must be answered, by one wake.
func TestWakeLongerThanTheClientsHandshakeTimeout(t *testing.T) {
	defer func(d time.Duration) { wakeHold = d }(wakeHold)
	wakeHold = 600 * time.Millisecond // below the client's 1 s, as 8 s is below client-go's 10 s
	var n counter
	_, target := wakesAfter(t, 2500*time.Millisecond, &n, tlsBackend(t))
	p := startTestProxy(t, target, NewGate(Limits{}))

	client, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: "https://" + p.ln.Addr().String(),
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, TLSHandshakeTimeout: time.Second}}) //nolint:gosec // a test backend
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	v, err := client.ServerVersion()
	if err != nil {
		t.Fatalf("GET /version through a wake longer than the client's TLS handshake timeout, after %s: %v",
			time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("answered %s after %s", v.GitVersion, time.Since(start).Round(time.Millisecond))
	if got := n.wakes.Load(); got != 1 {
		t.Errorf("%d wakes recorded, want 1", got)
	}
}

// TestWakeProxyHoldOutlastsHelloWait: the read deadline that bounds the wait for a ClientHello
// does not end a connection held for a longer wake.
func TestWakeProxyHoldOutlastsHelloWait(t *testing.T) {
	defer func(d time.Duration) { helloWait = d }(helloWait)
	helloWait = 200 * time.Millisecond
	var n counter
	_, target := wakesAfter(t, 700*time.Millisecond, &n, echoBackend(t))
	p := startTestProxy(t, target, NewGate(Limits{}))
	handshake(t, p.ln.Addr().String()).Close()
}

// TestAttackWakeHoldKeepsTheWakingSlot: a connection closed at wakeHold gives up waiting, not
// the wake: the tenant still counts as waking, so clients that let their connections be closed
// and move on to other sleeping tenants wake no more than MaxWaking at once.
func TestAttackWakeHoldKeepsTheWakingSlot(t *testing.T) {
	defer func(d time.Duration) { wakeHold = d }(wakeHold)
	wakeHold = 200 * time.Millisecond
	gate := NewGate(Limits{MaxWaking: 1})
	var n counter
	never := func() (bool, <-chan struct{}) { return false, make(chan struct{}) }
	slow := startTestProxy(t, n.target("slow", echoBackend(t), never), gate)
	other := startTestProxy(t, n.target("other", echoBackend(t), never), gate)
	for _, p := range []*Proxy{slow, other, slow} {
		c, err := net.Dial("tcp", p.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(clientHello); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the connection was not closed at wakeHold: %v", err)
		}
		c.Close()
	}
	if waking, awake := gate.counts(); waking != 1 || awake != 1 {
		t.Errorf("after the connections were closed at wakeHold: %d waking, %d awake by request; want the first wake's 1 and 1", waking, awake)
	}
	if got := n.wakes.Load(); got != 1 {
		t.Errorf("%d wakes recorded, want 1 (the other tenant's refused: one may wake at a time)", got)
	}
}

// TestAttackWakeAfterCloseTakesNoSlot: a listener closed (wake-on-request turned off) while one
// wake is held and another connection has not sent its ClientHello yet frees the tenant's slots
// for good. Before, the late ClientHello took the slots again after close had freed them, and
// nothing freed them: repeated, it filled MaxWaking and refused every Team's wakes until the
// provider restarted.
func TestAttackWakeAfterCloseTakesNoSlot(t *testing.T) {
	gate := NewGate(Limits{MaxWaking: 1})
	var n counter
	never := func() (bool, <-chan struct{}) { return false, make(chan struct{}) }
	p, err := Start("127.0.0.1:0", n.target("asleep", echoBackend(t), never), gate)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	late, err := net.Dial("tcp", p.ln.Addr().String()) // no ClientHello yet
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	held, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := held.Write(clientHello); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the wake to be recorded and both connections accepted", func() bool {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return n.wakes.Load() == 1 && gate.pending["127.0.0.1"] == 2
	})

	p.Close()
	if waking, awake := gate.counts(); waking != 0 || awake != 0 {
		t.Errorf("after close: %d waking, %d awake by request; want 0 and 0", waking, awake)
	}
	if _, err := late.Write(clientHello); err != nil {
		t.Fatal(err)
	}
	_ = late.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := late.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the late connection was not closed: %v", err)
	}
	waitFor(t, "the late connection to be released", func() bool {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return len(gate.pending) == 0
	})
	if waking, awake := gate.counts(); waking != 0 || awake != 0 {
		t.Errorf("after a ClientHello on a connection accepted before close: %d waking, %d awake by request; want 0 and 0", waking, awake)
	}
	if err := gate.startWake("other", "team-b"); err != nil {
		t.Errorf("another Team's cluster cannot wake: %v", err)
	}
}
