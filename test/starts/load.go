package starts

import (
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// connLoad holds n loopback connections open, all to a listener of its own, and replaces churn
// of them every second, so that ephemeral ports are taken and freed all the time. Nothing
// leaves this machine.
type connLoad struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	stop  chan struct{}
	wg    sync.WaitGroup
}

func startLoad(n, churn int) (*connLoad, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &connLoad{ln: ln, stop: make(chan struct{})}
	l.wg.Add(1)
	go func() { // the server side: hold every accepted connection until it is closed
		defer l.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				_, _ = c.Read(make([]byte, 1))
				c.Close()
			}()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			l.close()
			return nil, err
		}
		l.conns = append(l.conns, c)
	}
	if churn > 0 {
		l.wg.Add(1)
		go l.churn(churn)
	}
	return l, nil
}

func (l *connLoad) churn(perSecond int) {
	defer l.wg.Done()
	t := time.NewTicker(time.Second / time.Duration(perSecond))
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		c, err := net.Dial("tcp", l.ln.Addr().String())
		if err != nil {
			continue
		}
		l.mu.Lock()
		if len(l.conns) == 0 { // closing
			l.mu.Unlock()
			c.Close()
			return
		}
		i := rand.IntN(len(l.conns))
		old := l.conns[i]
		l.conns[i] = c
		l.mu.Unlock()
		old.Close()
	}
}

// held is how many connections are open now.
func (l *connLoad) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

func (l *connLoad) close() {
	close(l.stop)
	l.ln.Close()
	l.mu.Lock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
	l.mu.Unlock()
	l.wg.Wait()
}
