package localports

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"k8s.io/klog/v2"
)

// Allocator hands out loopback ports from a range, one per owner (a tenant), remembering which are
// taken. Ports inside the kernel's ephemeral range are never handed out (the package says why).
type Allocator struct {
	mu        sync.Mutex
	r         Range
	ephemeral Range
	taken     map[int]string // port -> owner
	// Available says whether nothing is bound to a port (a fake in unit tests).
	Available func(port int) bool
}

// NewAllocator hands out the ports of r outside the ephemeral range.
func NewAllocator(r Range) (*Allocator, error) {
	eph := Ephemeral()
	if r.Min <= 0 || r.Max < r.Min || r.Max > 65535 {
		return nil, fmt.Errorf("invalid port range %s", r)
	}
	if r.Min >= eph.Min && r.Max <= eph.Max {
		return nil, fmt.Errorf("the port range %s lies inside the kernel's ephemeral range %s: any outgoing connection may take its ports; choose one outside it", r, eph)
	}
	if r.Overlaps(eph) {
		klog.InfoS("The tenants' port range overlaps the kernel's ephemeral range; those ports are not used", "range", r.String(), "ephemeral", eph.String())
	}
	return &Allocator{r: r, ephemeral: eph, taken: map[int]string{}, Available: Available}, nil
}

// Claim records port as uid's (a port recorded in the state directory); false when another
// tenant holds it.
func (p *Allocator) Claim(port int, uid string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if owner, ok := p.taken[port]; ok && owner != uid {
		return false
	}
	p.taken[port] = uid
	return true
}

// Allocate gives uid a port of the range that no tenant holds and nothing is bound to. The search
// starts at a random place, so that two planes on one machine (a test's and `make run`'s) rarely
// pick the same free port before either listens on it.
func (p *Allocator) Allocate(uid string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	size := p.r.Max - p.r.Min + 1
	start := rand.IntN(size)
	for i := range size {
		port := p.r.Min + (start+i)%size
		if _, ok := p.taken[port]; ok || p.ephemeral.Contains(port) || !p.Available(port) {
			continue
		}
		p.taken[port] = uid
		return port, nil
	}
	return 0, fmt.Errorf("no free port left in %s on 127.0.0.1 (outside the ephemeral range %s)", p.r, p.ephemeral)
}

// Release frees port if uid holds it.
func (p *Allocator) Release(port int, uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken[port] == uid {
		delete(p.taken, port)
	}
}

// Transfer gives port, which from holds, to to at once (a spare control plane's port to the
// tenant that claims it); false if from does not hold it.
func (p *Allocator) Transfer(port int, from, to string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken[port] != from {
		return false
	}
	p.taken[port] = to
	return true
}
