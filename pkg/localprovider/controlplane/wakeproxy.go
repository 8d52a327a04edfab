package controlplane

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// wakeProxy holds a wake-on-request tenant's published port for the tenant's whole life and
// passes every connection through, untouched (no TLS ends here: the client's certificate must
// reach the tenant's kube-apiserver, and no shared process holds a tenant's serving key), to
// kube-apiserver on its internal port. While the control plane sleeps, a connection asks for a
// wake and waits, unanswered, until kube-apiserver serves. It sees every connection of the
// tenant's users, so it also tells when the tenant has been idle.
//
// Management-side clients (Cluster API, kwok, butler's workers) use the internal port (the
// admin kubeconfig's .svc keys), so they neither wake the tenant nor keep it awake.
type wakeProxy struct {
	ln      net.Listener
	backend string
	// ready says whether kube-apiserver serves on backend, and returns a channel closed once it
	// does.
	ready func() (bool, <-chan struct{})
	// wake records the wish to wake (remote is the connection that asked); idle the wish to
	// sleep after being unused for d. Both write the TenantCluster and may fail.
	wake func(ctx context.Context, remote string) error
	idle func(ctx context.Context, d time.Duration) error

	mu          sync.Mutex
	idleTimeout time.Duration
	open        int       // client connections open
	last        time.Time // last byte either way, or a connection's open or close
	idleAsked   bool      // the idle wish was written since the last connection
	wakeAsked   time.Time
	done        chan struct{}
	wg          sync.WaitGroup
}

const (
	// wakeWait bounds how long a connection waits for the control plane to serve.
	wakeWait = 3 * time.Minute
	// wakeAskAgain is how long after a wake request another connection asks again.
	wakeAskAgain = 10 * time.Second
)

func startWakeProxy(addr, backend string, ready func() (bool, <-chan struct{}),
	wake func(context.Context, string) error, idle func(context.Context, time.Duration) error) (*wakeProxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &wakeProxy{ln: ln, backend: backend, ready: ready, wake: wake, idle: idle, last: time.Now(), done: make(chan struct{})}
	p.wg.Add(2)
	go p.accept()
	go p.watchIdle()
	return p, nil
}

// setIdleTimeout changes the idle timeout (0: never sleep by idleness).
func (p *wakeProxy) setIdleTimeout(d time.Duration) {
	p.mu.Lock()
	p.idleTimeout = d
	p.mu.Unlock()
}

// close stops listening, ends the connections waiting for a wake, and waits for the loops.
func (p *wakeProxy) close() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *wakeProxy) accept() {
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
		go p.serve(conn, p.touch(+1))
	}
}

// touch records activity; delta counts a connection opening (+1) or closing (-1). It returns
// whether the idle wish had been written (an opening connection clears it).
func (p *wakeProxy) touch(delta int) (idleAsked bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open += delta
	p.last = time.Now()
	idleAsked = p.idleAsked
	if delta > 0 {
		p.idleAsked = false
	}
	return idleAsked
}

func (p *wakeProxy) serve(client net.Conn, idleAsked bool) {
	defer p.touch(-1)
	defer client.Close()
	remote := client.RemoteAddr().String()
	if serving, _ := p.ready(); !serving || idleAsked {
		// Asleep, or going to sleep by idleness: this connection is a request to wake, and a
		// wake while going to sleep wins.
		start := time.Now()
		if !p.waitAwake(remote) {
			return
		}
		klog.InfoS("Wake-on-request: kube-apiserver serves; passing the connection through", "remote", remote,
			"backend", p.backend, "waited", time.Since(start).Round(time.Millisecond))
	}
	backend, err := net.DialTimeout("tcp", p.backend, 5*time.Second)
	if err != nil {
		klog.InfoS("Wake-on-request: kube-apiserver did not take the connection", "backend", p.backend, "err", err)
		return
	}
	defer backend.Close()
	p.splice(client, backend)
}

// waitAwake asks for a wake and waits until kube-apiserver serves; false when it gave up. The
// wake starts the processes before it writes the wish, so the two overlap; the connection passes
// through once both are done.
func (p *wakeProxy) waitAwake(remote string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), wakeWait)
	defer cancel()
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	p.mu.Lock()
	ask := time.Since(p.wakeAsked) > wakeAskAgain
	if ask {
		p.wakeAsked = time.Now()
	}
	p.mu.Unlock()
	if ask {
		if err := p.wake(ctx, remote); err != nil {
			klog.InfoS("Wake-on-request: the wake was not recorded; closing the connection", "remote", remote, "err", err)
			p.mu.Lock()
			p.wakeAsked = time.Time{}
			p.mu.Unlock()
			return false
		}
	}
	for {
		serving, ch := p.ready()
		if serving {
			return true
		}
		select {
		case <-ctx.Done():
			klog.InfoS("Wake-on-request: the control plane did not serve in time; closing the connection", "remote", remote, "waited", wakeWait)
			return false
		case <-ch:
		}
	}
}

// splice copies both ways until either side closes; every read is activity.
func (p *wakeProxy) splice(a, b net.Conn) {
	var wg sync.WaitGroup
	copyHalf := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32*1024)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.touch(0)
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
	go copyHalf(b, a)
	go copyHalf(a, b)
	wg.Wait()
}

// watchIdle writes the wish to sleep once no client connection has been open and no byte has
// passed for the idle timeout, while the control plane serves. While it does not, it waits
// without ticking: a machine of many sleeping tenants pays no timer per tenant.
func (p *wakeProxy) watchIdle() {
	defer p.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if serving, ch := p.ready(); !serving {
			tick.Stop()
			select {
			case <-p.done:
				return
			case <-ch:
			}
			tick.Reset(time.Second)
		}
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
