package machines

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/realnode"
)

// run runs a command of the host's tools (ip, nsenter, ctr) and returns its error with its
// output.
func run(ctx context.Context, name string, args ...string) error {
	return realnode.Run(ctx, name, args...)
}

// inNode runs a command in the node's network namespace.
func inNode(ctx context.Context, l nodeLayout, name string, args ...string) error {
	return run(ctx, "nsenter", append([]string{"--net=" + l.netnsPath(), "--", name}, args...)...)
}

// bridgeNet is the host's bridge that every real node's network namespace is plugged into: the
// host holds its first address, nodes take the next ones.
type bridgeNet struct {
	name   string
	prefix netip.Prefix
	leases string // one file per address in use, named by the address, holding the node's id

	mu sync.Mutex
}

func (b *bridgeNet) hostIP() netip.Addr { return b.prefix.Masked().Addr().Next() }

// apiIP is the address every node holds on its own loopback and serves its tenant's API at
// (forwarded to the tenant's endpoint): the address of the tenant's kubernetes Service's
// endpoint, the same on every node, so a pod's connection never leaves its node. It is the
// bridge network's last address before the broadcast one; no node leases it.
func (b *bridgeNet) apiIP() netip.Addr { return b.broadcast().Prev() }

func (b *bridgeNet) broadcast() netip.Addr {
	a := b.prefix.Masked().Addr().As4()
	for i := b.prefix.Bits(); i < 32; i++ {
		a[i/8] |= 1 << (7 - i%8)
	}
	return netip.AddrFrom4(a)
}

// ensure makes the bridge with the host's address when it is not there.
func (b *bridgeNet) ensure(ctx context.Context) error {
	// Under the leases' lock: two nodes booting at once (a MachineDeployment's) would both add
	// the bridge, and the second boot failed on "File exists"; a release does not take it away
	// meanwhile.
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := net.InterfaceByName(b.name); err == nil {
		return nil
	}
	if err := run(ctx, "ip", "link", "add", b.name, "type", "bridge"); err != nil {
		return err
	}
	if err := run(ctx, "ip", "addr", "add", fmt.Sprintf("%s/%d", b.hostIP(), b.prefix.Bits()), "dev", b.name); err != nil {
		return err
	}
	return run(ctx, "ip", "link", "set", b.name, "up")
}

// lease gives the node id an address of the bridge: the one it holds, else the first free.
func (b *bridgeNet) lease(id string) (netip.Addr, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := os.MkdirAll(b.leases, 0o700); err != nil {
		return netip.Addr{}, err
	}
	entries, _ := os.ReadDir(b.leases)
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(b.leases, e.Name())); err == nil && string(data) == id {
			return netip.ParseAddr(e.Name())
		}
	}
	for a := b.hostIP().Next(); a.Less(b.apiIP()); a = a.Next() {
		f, err := os.OpenFile(filepath.Join(b.leases, a.String()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return netip.Addr{}, err
		}
		_, err = io.WriteString(f, id)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return a, err
	}
	return netip.Addr{}, fmt.Errorf("no free address left in %s on bridge %s", b.prefix, b.name)
}

// release frees the node id's address; the bridge goes with the last one.
func (b *bridgeNet) release(ctx context.Context, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	entries, _ := os.ReadDir(b.leases)
	left := 0
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(b.leases, e.Name())); err == nil && string(data) == id {
			_ = os.Remove(filepath.Join(b.leases, e.Name()))
			continue
		}
		left++
	}
	if left == 0 {
		if err := run(ctx, "ip", "link", "del", b.name); err != nil {
			klog.FromContext(ctx).V(2).Info("Removing the nodes' bridge", "err", err)
		}
	}
}

// plug makes the node's network namespace with one end of a veth pair in it (eth0, the node's
// address) and the other on the bridge. The node has no default route: it reaches the other
// nodes on the bridge and, when the tenant's endpoint is not on the host's loopback (which is
// forwarded), that endpoint's address through the host. Pods never reach the host: forwarded
// traffic to the host's bridge address is dropped, and to the endpoint's address on any other
// port (the host serves more than the tenant's API there, such as a cluster's etcd).
func (b *bridgeNet) plug(ctx context.Context, l nodeLayout, ip netip.Addr, endpoint string) error {
	if _, err := os.Stat(l.netnsPath()); err != nil {
		if err := run(ctx, "ip", "netns", "add", l.netnsName()); err != nil {
			return err
		}
	}
	steps := [][]string{
		{"ip", "link", "add", l.hostVeth(), "type", "veth", "peer", "name", "eth0", "netns", l.netnsName()},
		{"ip", "link", "set", l.hostVeth(), "master", b.name, "up"},
	}
	if _, err := net.InterfaceByName(l.hostVeth()); err == nil {
		steps = steps[1:]
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	inside := [][]string{
		{"ip", "link", "set", "lo", "up"},
		{"ip", "addr", "replace", fmt.Sprintf("%s/%d", ip, b.prefix.Bits()), "dev", "eth0"},
		{"ip", "link", "set", "eth0", "up"},
		// The node routes its pods' traffic to other nodes' pods.
		{"sysctl", "-qw", "net.ipv4.ip_forward=1"},
		{"iptables", "-w", "-I", "FORWARD", "-d", b.hostIP().String(), "-j", "DROP"},
		// The tenant's API for the node's pods; the node answers no ARP for it on the bridge,
		// where every node holds it.
		{"sysctl", "-qw", "net.ipv4.conf.all.arp_ignore=1"},
		{"sysctl", "-qw", "net.ipv4.conf.all.arp_announce=2"},
		{"ip", "addr", "replace", b.apiIP().String() + "/32", "dev", "lo"},
	}
	if host, port, err := net.SplitHostPort(endpoint); err == nil && !isLoopbackEndpoint(endpoint) {
		inside = append(inside,
			[]string{"ip", "route", "replace", host, "via", b.hostIP().String()},
			[]string{"iptables", "-w", "-I", "FORWARD", "-d", host, "-p", "tcp", "!", "--dport", port, "-j", "DROP"},
			[]string{"iptables", "-w", "-I", "FORWARD", "-d", host, "!", "-p", "tcp", "-j", "DROP"})
	}
	for _, s := range inside {
		if err := inNode(ctx, l, s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// listenInNetns listens on addr inside the network namespace at nsPath: the socket belongs to
// the namespace it was made in, whichever thread uses it later.
func listenInNetns(nsPath, addr string) (net.Listener, error) {
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer self.Close()
	target, err := os.Open(nsPath)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("entering %s: %w", nsPath, err)
	}
	l, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays in the node's namespace: leave it locked, so it ends with this goroutine.
		if l != nil {
			l.Close()
		}
		return nil, fmt.Errorf("returning from %s: %w", nsPath, err)
	}
	runtime.UnlockOSThread()
	return l, lerr
}

// forwardEndpoint makes the tenant's endpoint reachable from inside the node at listen, a
// plain TCP passthrough dialled from the host (TLS ends at the tenant's kube-apiserver). At the
// endpoint's own address when it is on the host's loopback: the node's kubelet dials the
// endpoint of its bootstrap data, which names the host's 127.0.0.1, and the node's own loopback
// is not the host's. At the node's API address for its pods (the kubernetes Service). The
// listener closes with ctx.
func forwardEndpoint(ctx context.Context, l nodeLayout, listen, endpoint string) error {
	ln, err := listenInNetns(l.netnsPath(), listen)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go func() {
		d := nodeDialer(l, endpoint)
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := d.DialContext(ctx, "tcp", endpoint)
				if err != nil {
					return
				}
				defer out.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
				go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
				select {
				case <-done:
				case <-ctx.Done():
				}
			}()
		}
	}()
	return nil
}

// nodeDialer dials the tenant's endpoint from an address of the node's own on the host's
// loopback (127.x.y.z, from its id) when the endpoint is on loopback: the wake-on-request
// listener bounds connections per client address, and with every node's kubelet and pods
// dialling from 127.0.0.1, one tenant's pod holding connections open would use up that bound
// for every node, kubelet and kubectl of every Team on the host.
func nodeDialer(l nodeLayout, endpoint string) net.Dialer {
	host, _, _ := net.SplitHostPort(endpoint)
	if a, err := netip.ParseAddr(host); !isLoopbackEndpoint(endpoint) || (err == nil && !a.Is4()) {
		return net.Dialer{} // ::1 is the only IPv6 loopback address
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(l.id))
	v := h.Sum32()
	source := net.IPv4(127, byte(1+v%254), byte(v>>8), byte(1+(v>>16)%254))
	return net.Dialer{LocalAddr: &net.TCPAddr{IP: source}}
}

// isLoopbackEndpoint says whether host:port names a loopback address.
func isLoopbackEndpoint(endpoint string) bool {
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// setPodRoutes makes the node route each other node's pod CIDR to that node's address on the
// bridge (what a host-gw network plugin does), and drops routes to nodes gone.
func setPodRoutes(ctx context.Context, l nodeLayout, routes map[string]string) error {
	for cidr, via := range routes {
		if err := inNode(ctx, l, "ip", "route", "replace", cidr, "via", via, "dev", "eth0"); err != nil {
			return err
		}
	}
	out, err := exec.CommandContext(ctx, "nsenter", "--net="+l.netnsPath(), "--", "ip", "-4", "route", "show", "dev", "eth0").Output()
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == "via" && f[0] != "default" {
			if _, ok := routes[f[0]]; !ok {
				_ = inNode(ctx, l, "ip", "route", "del", f[0])
			}
		}
	}
	return nil
}
