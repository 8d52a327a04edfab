// Package wakeproxy is the wake-on-request listener of a hibernating tenant: it holds the
// tenant's published port, passes connections through to kube-apiserver untouched, asks for a
// wake when a ClientHello arrives while the control plane sleeps, and for sleep once it has been
// idle. Gate bounds what unauthenticated clients can make the listeners do.
package wakeproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Proxy holds a wake-on-request tenant's published port for the tenant's whole life and
// passes every connection through, untouched (no TLS ends here: the client's certificate must
// reach the tenant's kube-apiserver, and no shared process holds a tenant's serving key), to
// kube-apiserver on its internal port. While the control plane sleeps, a connection that opens
// with a TLS ClientHello asks for a wake and waits, unanswered, until kube-apiserver serves. It
// sees every connection of the tenant's users, so it also tells when the tenant has been idle.
//
// What counts: a connection wakes the tenant only once it has sent a ClientHello (a bare TCP
// connect, a port scan, wakes nothing), and it counts as use (keeps the tenant awake) only once
// the TLS handshake with the tenant completed: the tenant answered the ClientHello and the
// client went on. The listener cannot see requests (they are encrypted, and must stay so), so a
// completed handshake is the most it can know. Every connection passes the provider's
// Gate: bounds on clusters waking and awake by request, and per source.
//
// Management-side clients (Cluster API, kwok, butler's workers) use the internal port (the
// admin kubeconfig's .svc keys), so they neither wake the tenant nor keep it awake.
type Proxy struct {
	ln      net.Listener
	uid     string
	team    string // the tenant's namespace, whose share of the awake slots it counts in
	backend string
	gate    *Gate
	// ready says whether kube-apiserver serves on backend, and returns a channel closed once it
	// does.
	ready func() (bool, <-chan struct{})
	// wake records the wish to wake (remote is the connection that asked); idle the wish to
	// sleep after being unused for d. Both write the TenantCluster and may fail.
	wake func(ctx context.Context, remote string) error
	idle func(ctx context.Context, d time.Duration) error

	mu          sync.Mutex
	idleTimeout time.Duration
	open        int           // established client connections open
	last        time.Time     // last byte either way on an established connection, or its open or close
	idleAsked   bool          // the idle wish was written since the last established connection
	wakeAsked   time.Time     // when the wake under way was asked; zero once it served
	watching    bool          // a watchWake runs
	done        chan struct{} // closed (under mu) by close: from then on no slot of the gate is taken
	wg          sync.WaitGroup
}

// Variables for tests.
var (
	// wakeWait bounds how long a wake may take to serve before it frees its slots of the gate.
	wakeWait = 3 * time.Minute
	// wakeHold bounds how long a connection is held, unanswered, for a wake (from its accept).
	// Clients give a TLS handshake a bound of their own: client-go's (kubectl's) and Go's
	// http.Transport is 10 s, and a GET that hits it fails without a retry ("net/http: TLS
	// handshake timeout"). Closed before that, the connection fails with a reset, on which
	// client-go retries a GET (10 times, 1 s apart), and its retry is held again: a wake longer
	// than 10 s (a loaded machine) still answers kubectl's first request.
	wakeHold = 8 * time.Second
	// helloWait bounds how long a new connection may take to send its ClientHello.
	helloWait = 10 * time.Second
)

const (
	// wakeAskAgain is how long after a wake request another connection asks again, while that
	// wake has not served.
	wakeAskAgain = 10 * time.Second
	// wakeGrace is how long a cluster woken on request stays awake with no connection
	// established (a ClientHello wakes it; only a completed handshake counts as use).
	wakeGrace = time.Minute
)

// Target is what a listener serves: the tenant, kube-apiserver's internal address, whether
// it serves, and what a wake and an idle spell write.
type Target struct {
	UID, Team, Backend string
	Ready              func() (bool, <-chan struct{})
	Wake               func(context.Context, string) error
	Idle               func(context.Context, time.Duration) error
}

// Start listens on addr for t; gate holds the counts every listener shares.
func Start(addr string, t Target, gate *Gate) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, uid: t.UID, team: t.Team, backend: t.Backend, gate: gate, ready: t.Ready, wake: t.Wake, idle: t.Idle,
		last: time.Now(), done: make(chan struct{})}
	p.wg.Add(2)
	go p.accept()
	go p.watchIdle()
	return p, nil
}

// SetIdleTimeout changes the idle timeout (0: never sleep by idleness).
func (p *Proxy) SetIdleTimeout(d time.Duration) {
	p.mu.Lock()
	p.idleTimeout = d
	p.mu.Unlock()
}

// Close stops listening, ends the connections waiting for a wake, waits for the loops, and frees
// the tenant's slots of the gate. Slots are taken only under p.mu with done open (waitAwake), so
// every slot taken is taken before the slept here, and none after it.
func (p *Proxy) Close() {
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return
	default:
	}
	close(p.done)
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
	p.gate.slept(p.uid)
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			klog.ErrorS(err, "Wake-on-request listener: accept failed", "addr", p.ln.Addr().String())
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go p.serve(conn)
	}
}

// touch records activity of an established connection; delta counts one opening (+1) or
// closing (-1).
func (p *Proxy) touch(delta int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open += delta
	p.last = time.Now()
	if delta > 0 {
		p.idleAsked = false
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer client.Close()
	accepted := time.Now()
	remote := client.RemoteAddr().String()
	release, err := p.gate.admit(remote)
	if err != nil {
		klog.V(2).InfoS("Wake-on-request: connection refused", "uid", p.uid, "remote", remote, "reason", err)
		return
	}
	defer release()
	hello, err := readClientHello(client)
	if err != nil {
		// No TLS: a port scan, a health check of the port, or garbage. It neither wakes nor counts.
		klog.V(4).InfoS("Wake-on-request: connection closed before a ClientHello", "uid", p.uid, "remote", remote, "reason", err)
		return
	}
	p.mu.Lock()
	idleAsked := p.idleAsked
	p.mu.Unlock()
	if serving, _ := p.ready(); !serving || idleAsked {
		// Asleep, or going to sleep by idleness: this connection is a request to wake, and a
		// wake while going to sleep wins.
		start := time.Now()
		if !p.waitAwake(remote, accepted) {
			return
		}
		klog.InfoS("Wake-on-request: kube-apiserver serves; passing the connection through", "uid", p.uid, "remote", remote,
			"backend", p.backend, "waited", time.Since(start).Round(time.Millisecond))
	}
	backend, err := net.DialTimeout("tcp", p.backend, 5*time.Second)
	if err != nil {
		klog.InfoS("Wake-on-request: kube-apiserver did not take the connection", "backend", p.backend, "err", err)
		return
	}
	defer backend.Close()
	if _, err := backend.Write(hello); err != nil {
		return
	}
	p.splice(client, backend, release)
}

// readClientHello reads the first bytes of a TLS connection, a handshake record holding a
// ClientHello, within helloWait; it returns them to be passed on.
func readClientHello(c net.Conn) ([]byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(helloWait))
	// Record header: type 22 (handshake), version 3.x, length; then the handshake type, 1.
	head := make([]byte, 6)
	_, err := io.ReadFull(c, head)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, err
	}
	if head[0] != 0x16 || head[1] != 0x03 || head[5] != 0x01 {
		return nil, fmt.Errorf("not a TLS ClientHello (first bytes %x)", head)
	}
	return head, nil
}

// waitAwake asks for a wake and holds the connection until kube-apiserver serves, at most
// wakeHold from its accept; false when it gave up (the client retries) or a bound of the gate
// refused the wake. The wake starts the processes before it writes the wish, so the two overlap;
// the connection passes through once both are done. The wake goes on when the connection gives
// up: watchWake keeps its slot of the gate until it serves.
func (p *Proxy) waitAwake(remote string, accepted time.Time) bool {
	p.mu.Lock()
	if err := p.startWakeLocked(); err != nil {
		p.mu.Unlock()
		klog.InfoS("Wake-on-request: not woken; closing the connection", "uid", p.uid, "remote", remote, "reason", err)
		return false
	}
	ask := time.Since(p.wakeAsked) > wakeAskAgain
	if ask {
		p.wakeAsked = time.Now()
		p.idleAsked = false
	}
	if !p.watching {
		p.watching = true
		go p.watchWake(time.Now())
	}
	p.graceLocked()
	p.mu.Unlock()
	if ask && !p.askWake(remote) {
		return false
	}
	hold := time.NewTimer(time.Until(accepted.Add(min(wakeHold, wakeWait))))
	defer hold.Stop()
	for {
		serving, ch := p.ready()
		if serving {
			p.gate.woke(p.uid)
			p.mu.Lock()
			p.graceLocked()
			p.mu.Unlock()
			return true
		}
		select {
		case <-p.done:
			return false
		case <-hold.C:
			klog.InfoS("Wake-on-request: kube-apiserver does not serve yet; closing the connection before the client's TLS handshake timeout, for it to retry",
				"uid", p.uid, "remote", remote, "held", time.Since(accepted).Round(time.Millisecond))
			return false
		case <-ch:
		}
	}
}

// startWakeLocked takes the tenant's slots of the gate for a wake, unless the listener is closed:
// a connection accepted before close whose ClientHello arrives after it would otherwise take
// slots that nothing frees (close freed them already). p.mu is held.
func (p *Proxy) startWakeLocked() error {
	select {
	case <-p.done:
		return errors.New("the listener is closed")
	default:
	}
	return p.gate.startWake(p.uid, p.team)
}

// askWake records the wake; false (the wake's slots freed) when it could not be recorded.
func (p *Proxy) askWake(remote string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), wakeWait)
	defer cancel()
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := p.wake(ctx, remote); err != nil {
		klog.InfoS("Wake-on-request: the wake was not recorded; closing the connection", "uid", p.uid, "remote", remote, "err", err)
		p.mu.Lock()
		p.wakeAsked = time.Time{}
		p.mu.Unlock()
		p.gate.slept(p.uid)
		return false
	}
	return true
}

// watchWake waits, beyond the connections held for it, for the wake that counts in the gate
// since start to serve: then the tenant no longer counts as waking, and its wakeGrace counts
// from then. A tenant that does not serve within wakeWait must hold neither a waking nor an
// awake slot for good (it would never sleep by idleness, having never served). One runs at a
// time (p.watching).
func (p *Proxy) watchWake(start time.Time) {
	timeout := time.NewTimer(wakeWait)
	defer timeout.Stop()
	for {
		serving, ch := p.ready()
		if serving && p.endWatch(p.gate.woke, true) {
			return
		}
		select {
		case <-p.done: // close frees the slots, and no slot is taken after it
			p.endWatch(nil, false)
			return
		case <-timeout.C:
			if serving, _ := p.ready(); serving && p.endWatch(p.gate.woke, true) {
				return
			}
			klog.InfoS("Wake-on-request: the control plane did not serve in time; its wake counts no more", "uid", p.uid,
				"waited", time.Since(start).Round(time.Second))
			p.endWatch(p.gate.slept, false)
			return
		case <-ch:
		}
	}
}

// endWatch ends a watchWake: it clears p.watching and tells the gate (woke or slept, if any) in
// one critical section with waitAwake's, so a ClientHello either takes the slots again after this
// and starts a watcher of its own, or came before and sees its slots freed here (its connection
// is still held at most wakeHold): never a slot taken with no watcher to free it. grace: the
// tenant serves, its wakeGrace counts from now, and the wake asked is done: a ClientHello after
// the next stop asks anew, however soon. With grace it serves still, or the watch goes on (false):
// had it stopped since it was seen serving, a ClientHello may have taken the slots of the next
// wake meanwhile, and this watch is the one that frees them.
func (p *Proxy) endWatch(tell func(uid string), grace bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if serving, _ := p.ready(); grace && !serving {
		return false
	}
	p.watching = false
	if tell != nil {
		tell(p.uid)
	}
	if grace {
		p.wakeAsked = time.Time{}
		p.graceLocked()
	}
	return true
}

// graceLocked gives a cluster woken on request wakeGrace to be used: a wake is asked by a mere
// ClientHello, so unless a handshake completes (and then the idle timeout counts from its last
// byte) the cluster sleeps again after wakeGrace, whatever its idle timeout. p.mu is held.
func (p *Proxy) graceLocked() {
	if g := time.Now().Add(wakeGrace - p.idleTimeout); g.After(p.last) {
		p.last = g
	}
}

// splice copies both ways until either side closes. The connection is established (counted as
// use, and released from its source's bound) once the tenant answered the ClientHello and the
// client sent more: its side of the handshake went on. From then on every read is activity.
func (p *Proxy) splice(client, backend net.Conn, release func()) {
	var (
		mu                    sync.Mutex
		answered, established bool
		wg                    sync.WaitGroup
	)
	saw := func(fromClient bool) bool {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case established:
		case !fromClient:
			answered = true
			return false
		case answered:
			established = true
			release()
			p.touch(+1)
		default:
			return false
		}
		return true
	}
	copyHalf := func(dst, src net.Conn, fromClient bool) {
		defer wg.Done()
		buf := make([]byte, 32*1024)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if saw(fromClient) {
					p.touch(0)
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		// Half-close so the other direction can finish; a full close ends it.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	wg.Add(2)
	go copyHalf(backend, client, true)
	go copyHalf(client, backend, false)
	wg.Wait()
	mu.Lock()
	if established {
		p.touch(-1)
	}
	mu.Unlock()
}

// watchIdle writes the wish to sleep once no client connection has been open and no byte has
// passed for the idle timeout, while the control plane serves. While it does not, it waits
// without ticking: a machine of many sleeping tenants pays no timer per tenant.
func (p *Proxy) watchIdle() {
	defer p.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	served := false
	for {
		if serving, ch := p.ready(); !serving {
			if served {
				// Stopped: no longer awake by request, whoever woke it.
				p.gate.slept(p.uid)
			}
			tick.Stop()
			select {
			case <-p.done:
				return
			case <-ch:
			}
			tick.Reset(time.Second)
		}
		served = true
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
		p.mu.Lock()
		d, unused := p.idleTimeout, time.Since(p.last)
		due := d > 0 && p.open == 0 && !p.idleAsked && unused >= d
		p.mu.Unlock()
		if serving, _ := p.ready(); !due || !serving {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := p.idle(ctx, unused.Round(time.Second))
		cancel()
		if err != nil {
			klog.InfoS("Wake-on-request: the idle wish was not recorded; trying again", "err", err)
			continue
		}
		p.mu.Lock()
		p.idleAsked = p.open == 0
		p.mu.Unlock()
	}
}
