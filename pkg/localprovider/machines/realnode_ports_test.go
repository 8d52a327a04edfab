package machines

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
)

// A real node's process whose address another socket in the node's network namespace holds is
// not started: the error is ErrPortTaken and names the address and the socket's process. The
// test's own namespace stands in for the node's (entering a namespace needs root).
func TestCheckPortsNamesTheHolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("entering a network namespace needs root")
	}
	ns := "/proc/self/ns/net"
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	if err := checkPortsIn(context.Background(), ns, "test", "the kubelet", []string{freeAddr}); err != nil {
		t.Errorf("a free address: %v", err)
	}
	err = checkPortsIn(context.Background(), ns, "test", "the kubelet", []string{freeAddr, held.Addr().String()})
	if !errors.Is(err, ErrPortTaken) {
		t.Fatalf("a held address: %v, want ErrPortTaken", err)
	}
	for _, want := range []string{"the kubelet", held.Addr().String(), fmt.Sprintf("pid=%d)", os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not name %q", err, want)
		}
	}
}

// The node's processes listen where checkPorts looks: the kubelet's configuration and
// kube-proxy's flags name the same ports.
func TestRealNodePortsAreTheConfigured(t *testing.T) {
	config := kubeletConfig(nodeLayout{id: "x", dir: "/d", run: "/r"}, "10.250.0.2", "/ca", "local://a/b", nil, "")
	for _, want := range []string{"address: 10.250.0.2\nport: 10250\n", "healthzBindAddress: 127.0.0.1\nhealthzPort: 10248\n"} {
		if !strings.Contains(config, want) {
			t.Errorf("the kubelet's configuration lacks %q:\n%s", want, config)
		}
	}
	if got := strings.Join(append(kubeletAddresses("10.250.0.2"), kubeProxyAddresses()...), " "); got != "10.250.0.2:10250 127.0.0.1:10248 127.0.0.1:10256 127.0.0.1:10249" {
		t.Errorf("checked addresses %s", got)
	}
}
