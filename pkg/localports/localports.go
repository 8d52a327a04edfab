// Package localports picks loopback ports for the local plane's processes and its tenants'
// control planes. A port is taken from outside the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range): a port inside it can be given to any outgoing
// connection between the moment a free one is found and the moment its server binds it, which
// on a busy machine (thousands of open connections) failed about one start in three. Outside
// that range only another server binding the same port on purpose can take it, and the callers
// retry on another port when that happens before a port is published.
package localports

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Range is an inclusive range of ports.
type Range struct{ Min, Max int }

func (r Range) Contains(port int) bool { return port >= r.Min && port <= r.Max }

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Min, r.Max) }

// Overlaps says whether the two ranges share a port.
func (r Range) Overlaps(o Range) bool { return r.Min <= o.Max && o.Min <= r.Max }

// ParseRange reads "min-max".
func ParseRange(s string) (Range, error) {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return Range{}, fmt.Errorf("%q is not a port range (min-max)", s)
	}
	min, err1 := strconv.Atoi(strings.TrimSpace(lo))
	max, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err := errors.Join(err1, err2); err != nil {
		return Range{}, fmt.Errorf("%q is not a port range (min-max): %w", s, err)
	}
	if min <= 0 || max < min || max > 65535 {
		return Range{}, fmt.Errorf("invalid port range %d-%d", min, max)
	}
	return Range{min, max}, nil
}

// Tenants is the local provider's default range for tenant kube-apiservers; Plane ports are
// picked elsewhere, so a plane and its tenants never race for a port.
var Tenants = Range{30000, 32000}

// plane is where Free looks, less the ephemeral range and Tenants.
var plane = Range{10000, 65535}

const ephemeralFile = "/proc/sys/net/ipv4/ip_local_port_range"

// Ephemeral is the kernel's ephemeral port range. Linux's default (32768-60999) when the file
// cannot be read.
func Ephemeral() Range {
	data, err := os.ReadFile(ephemeralFile)
	if err != nil {
		return Range{32768, 60999}
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return Range{32768, 60999}
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo > hi {
		return Range{32768, 60999}
	}
	return Range{lo, hi}
}

// Free returns a loopback port outside the ephemeral range and the tenants' range that nothing
// is bound to, chosen at random so that two planes starting at once rarely pick the same one.
// The port is not held: a caller that fails to bind it should ask again.
func Free() (int, error) {
	eph := Ephemeral()
	size := plane.Max - plane.Min + 1
	for range 10000 {
		port := plane.Min + rand.IntN(size)
		if eph.Contains(port) || Tenants.Contains(port) {
			continue
		}
		if Available(port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free loopback port in %s outside the ephemeral range %s and %s", plane, eph, Tenants)
}

// Available says whether port can be bound on 127.0.0.1 now.
func Available(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// InUse says whether err is a bind failing because the address is taken.
func InUse(err error) bool {
	return err != nil && strings.Contains(err.Error(), "address already in use")
}
