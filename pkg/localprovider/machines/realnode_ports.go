package machines

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
)

// The ports a real node's processes listen on. Every one is in the node's own network namespace,
// none on the host's: a host process holding 10250 (the one-node cluster's kubelet does) takes
// nothing from a node. Only a socket in the node's namespace can: the provider's forward of a
// loopback endpoint on one of these ports (--port-range allows them), a hostNetwork pod when the
// kubelet or kube-proxy starts again (a rotation), or a host process that entered the namespace.
const (
	kubeletPort        = 10250 // on the node's address: the tenant's kube-apiserver dials it
	kubeletHealthzPort = 10248 // on the node's loopback
	proxyHealthzPort   = 10256 // on the node's loopback
	proxyMetricsPort   = 10249 // on the node's loopback
)

// ErrPortTaken is a port a node's process listens on that another socket holds in the node's
// network namespace.
var ErrPortTaken = errors.New("a port of the node is taken")

func kubeletAddresses(nodeIP string) []string {
	return []string{net.JoinHostPort(nodeIP, strconv.Itoa(kubeletPort)), loopbackAddress(kubeletHealthzPort)}
}

func kubeProxyAddresses() []string {
	return []string{loopbackAddress(proxyHealthzPort), loopbackAddress(proxyMetricsPort)}
}

func loopbackAddress(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// checkPorts says, before process starts, which of its addresses another socket in the node's
// network namespace holds, and whose socket it is: the kubelet would exit on it with a line in
// its log, and the machine would only say NodeDown.
func checkPorts(ctx context.Context, l nodeLayout, process string, addrs []string) error {
	return checkPortsIn(ctx, l.netnsPath(), l.netnsName(), process, addrs)
}

// checkPortsIn is checkPorts in the network namespace at nsPath, named name in its message.
func checkPortsIn(ctx context.Context, nsPath, name, process string, addrs []string) error {
	for _, a := range addrs {
		ln, err := listenInNetns(nsPath, a)
		if err == nil {
			ln.Close()
			continue
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("checking %s's address %s in the node's network namespace: %w", process, a, err)
		}
		return fmt.Errorf("%w: %s cannot listen on %s in the node's network namespace %s: %s holds it", ErrPortTaken, process, a, name, portHolder(ctx, nsPath, a))
	}
	return nil
}

var ssUsers, ssFD = regexp.MustCompile(`users:\(\(.*\)\)`), regexp.MustCompile(`,fd=[0-9]+`)

// portHolder names the processes whose socket listens on addr's port in the node's network
// namespace (ss's users, host pids), or says it found none (a socket no process holds any more).
func portHolder(ctx context.Context, nsPath, addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	out, err := exec.CommandContext(ctx, "nsenter", "--net="+nsPath, "--", "ss", "-Hltnp", "sport = :"+port).Output()
	if err != nil {
		return "a socket (ss: " + err.Error() + ")"
	}
	if m := ssUsers.Find(out); m != nil {
		// Without the descriptors: the same holder reads the same at each try (a new message is
		// a status write, which brings the machine back at once, past its backoff).
		return "a socket of " + ssFD.ReplaceAllString(string(m), "")
	}
	return "a socket of no process"
}
