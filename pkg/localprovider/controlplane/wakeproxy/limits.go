package wakeproxy

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
)

// Limits bound what unauthenticated clients can make the wake-on-request listeners do: the
// listeners pass connections before any credential is checked (the tenant checks it), so
// anyone who reaches an endpoint can send a ClientHello. Zero means no bound.
type Limits struct {
	// MaxWaking is how many clusters may be waking on request at once (asked, not yet serving).
	MaxWaking int
	// MaxAwake is how many clusters may be awake because of a request (woken by a connection and
	// not asleep since); a user's hibernated: false does not count.
	MaxAwake int
	// MaxAwakePerTeam is how many of them may be one Team's (namespace's). The listeners are
	// reachable without credentials, so one client completing handshakes with a Team's
	// endpoints would otherwise hold every Team's slots; with a share it needs the endpoints of
	// MaxAwake/MaxAwakePerTeam Teams.
	MaxAwakePerTeam int
	// PerSource is how many connections one client (an IPv4 address, an IPv6 /64) may have
	// open at once, over every listener, that have not yet completed a TLS handshake with the
	// tenant (waiting for a wake or in the handshake).
	PerSource int
}

// DefaultLimits are the provider's defaults (its flags).
var DefaultLimits = Limits{MaxWaking: 4, MaxAwake: 16, MaxAwakePerTeam: 4, PerSource: 32}

// Gate holds the counts behind Limits, shared by every listener of the provider.
type Gate struct {
	limits Limits

	mu      sync.Mutex
	waking  map[string]bool   // tenant UIDs asked to wake, not yet serving
	awake   map[string]string // tenant UIDs woken by a request, not asleep since: their Team
	pending map[string]int    // connections not yet established, by client address
}

func NewGate(l Limits) *Gate {
	return &Gate{limits: l, waking: map[string]bool{}, awake: map[string]string{}, pending: map[string]int{}}
}

// admit counts a new connection from remote against its source's bound; release (once) when
// the connection is established or closed.
func (g *Gate) admit(remote string) (release func(), err error) {
	host := sourceOf(remote)
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := g.pending[host]; g.limits.PerSource > 0 && n >= g.limits.PerSource {
		return nil, fmt.Errorf("%d connections of this source are not established yet (bound %d)", n, g.limits.PerSource)
	}
	g.pending[host]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.pending[host]--; g.pending[host] <= 0 {
				delete(g.pending, host)
			}
		})
	}, nil
}

// sourceOf is the client a connection from remote (host:port) is counted as: its IPv4 address
// (an IPv4-mapped IPv6 one unmapped), or its IPv6 /64 — one client commonly holds a whole /64
// and could send each connection from another address of it.
func sourceOf(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.WithZone("").Unmap()
	if addr.Is4() {
		return addr.String()
	}
	return netip.PrefixFrom(addr, 64).Masked().String()
}

// startWake counts a wake of tenant uid, unless a bound is reached; a tenant already counted
// passes again.
func (g *Gate) startWake(uid, team string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.awake[uid]; ok { // every waking tenant is counted awake too
		return nil
	}
	if n := len(g.waking); g.limits.MaxWaking > 0 && n >= g.limits.MaxWaking {
		return fmt.Errorf("%d clusters are waking on request already (bound %d)", n, g.limits.MaxWaking)
	}
	if n := len(g.awake); g.limits.MaxAwake > 0 && n >= g.limits.MaxAwake {
		return fmt.Errorf("%d clusters are awake on request already (bound %d)", n, g.limits.MaxAwake)
	}
	if n := g.awakeOf(team); g.limits.MaxAwakePerTeam > 0 && n >= g.limits.MaxAwakePerTeam {
		return fmt.Errorf("%d clusters of this Team are awake on request already (bound %d)", n, g.limits.MaxAwakePerTeam)
	}
	g.waking[uid], g.awake[uid] = true, team
	return nil
}

// awakeOf counts team's tenants awake by request; g.mu is held.
func (g *Gate) awakeOf(team string) (n int) {
	for _, t := range g.awake {
		if t == team {
			n++
		}
	}
	return n
}

// woke says tenant uid serves: it no longer counts as waking (it stays awake by request).
func (g *Gate) woke(uid string) {
	g.mu.Lock()
	delete(g.waking, uid)
	g.mu.Unlock()
}

// slept says tenant uid stopped (or its wake failed, or its listener went): it counts no more.
func (g *Gate) slept(uid string) {
	g.mu.Lock()
	delete(g.waking, uid)
	delete(g.awake, uid)
	g.mu.Unlock()
}

// counts returns the tenants waking and awake by request (for tests and logs).
func (g *Gate) counts() (waking, awake int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waking), len(g.awake)
}
