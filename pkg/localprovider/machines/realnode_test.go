package machines

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/realnode"
)

func TestBridgeLeases(t *testing.T) {
	b := &bridgeNet{name: "test-no-such-bridge", prefix: netip.MustParsePrefix("10.250.0.0/29"), leases: t.TempDir()}
	if b.apiIP().String() != "10.250.0.6" {
		t.Errorf("the nodes' API address in %s: %s, want the last before the broadcast address", b.prefix, b.apiIP())
	}
	a, err := b.lease("node-a")
	if err != nil || a.String() != "10.250.0.2" {
		t.Fatalf("first lease: %v %v; want 10.250.0.2 (the host holds .1)", a, err)
	}
	again, _ := b.lease("node-a")
	if again != a {
		t.Errorf("a node leased again gets %v, not its %v", again, a)
	}
	for i, want := range []string{"10.250.0.3", "10.250.0.4", "10.250.0.5"} {
		c, err := b.lease(fmt.Sprint("node-", i))
		if err != nil || c.String() != want {
			t.Fatalf("lease %d: %v %v, want %s", i, c, err, want)
		}
	}
	// Neither the nodes' API address nor the broadcast address is leased.
	if _, err := b.lease("node-c"); err == nil || !strings.Contains(err.Error(), "no free address") {
		t.Errorf("a lease past the network: %v", err)
	}
	b.release(context.Background(), "node-a")
	if d, err := b.lease("node-c"); err != nil || d != a {
		t.Errorf("after a release the address is free again: %v %v", d, err)
	}
}

func TestNodeIDsDifferPerProvider(t *testing.T) {
	one := NewRealNodes(RealNodesOptions{}, "/state/one", nil)
	two := NewRealNodes(RealNodesOptions{}, "/state/two", nil)
	if one.nodeID("ns/m") == two.nodeID("ns/m") {
		t.Error("two providers' machines of the same name share a node id (netns, veth, cgroup)")
	}
	if id := one.nodeID("ns/m"); len(one.layout("ns/m", "/m").hostVeth()) > 15 || id != one.nodeID("ns/m") {
		t.Errorf("node id %q: not stable, or the veth name is longer than an interface name may be", id)
	}
}

func TestRealNodeConfigs(t *testing.T) {
	l := nodeLayout{id: "0123456789", dir: "/state/machines/ns/m/node", run: "/run/butler-nodes/0123456789"}
	k := kubeletConfig(l, "10.250.0.2", "/state/machines/ns/m/ca.crt", "local://ns/m", []string{"10.96.0.10"}, "")
	for _, want := range []string{"address: 10.250.0.2", "cgroupRoot: /butler-nodes/0123456789",
		"containerRuntimeEndpoint: unix:///run/butler-nodes/0123456789/containerd.sock",
		"clientCAFile: /state/machines/ns/m/ca.crt", `providerID: "local://ns/m"`, "clusterDNS: [10.96.0.10]",
		"clusterDomain: cluster.local", "anonymous: {enabled: false}", `nodefs.available: "0%"`} {
		if !strings.Contains(k, want) {
			t.Errorf("kubelet configuration lacks %q:\n%s", want, k)
		}
	}
	c := containerdConfig(l, true)
	for _, want := range []string{`address = "/run/butler-nodes/0123456789/containerd.sock"`,
		`root = "/state/machines/ns/m/node/containerd/root"`, `sandbox_image = "registry.k8s.io/pause:3.10"`,
		`conf_template = "/state/machines/ns/m/node/containerd/cni.template"`, "restrict_oom_score_adj = true"} {
		if !strings.Contains(c, want) {
			t.Errorf("containerd configuration lacks %q:\n%s", want, c)
		}
	}
	if tpl := renderCNITemplate(l); !strings.Contains(tpl, `"dataDir": "/state/machines/ns/m/node/cni-ipam"`) || !strings.Contains(tpl, "{{range $i, $r := .PodCIDRRanges}}") {
		t.Errorf("CNI template: leases outside the node, or containerd's fields rendered away:\n%s", tpl)
	}
}

func TestRealNodeRegistersWithoutKwok(t *testing.T) {
	n := NodeFor(bootstrap.JoinInfo{NodeName: "w"}, Registration{ProviderID: "local://ns/w", Address: "10.250.0.2"}, "v1.36.3")
	if _, ok := n.Annotations[KwokNodeAnnotation]; ok {
		t.Error("a real node's Node is handed to kwok")
	}
	if n.Status.Addresses[0].Address != "10.250.0.2" {
		t.Errorf("InternalIP %v, want the node's address on the bridge", n.Status.Addresses)
	}
	if k := NodeFor(bootstrap.JoinInfo{NodeName: "w"}, KwokNode("local://ns/w"), "v1.36.3"); k.Annotations[KwokNodeAnnotation] != KwokNodeValue || k.Status.Addresses[0].Address != NodeIP {
		t.Errorf("a kwok node: %v %v", k.Annotations, k.Status.Addresses)
	}
}

func TestNodeTypeOf(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	if got := nodeTypeOf(u); got != NodeTypeKwok {
		t.Errorf("unset: %q", got)
	}
	u.Object["spec"] = map[string]any{"nodeType": "real"}
	if got := nodeTypeOf(u); got != NodeTypeReal {
		t.Errorf("real: %q", got)
	}
}

func TestLoopbackEndpointsAndMounts(t *testing.T) {
	for ep, want := range map[string]bool{"127.0.0.1:30001": true, "localhost:6443": true, "[::1]:6443": true,
		"10.244.0.1:30001": false, "garbage": false} {
		if got := isLoopbackEndpoint(ep); got != want {
			t.Errorf("isLoopbackEndpoint(%q) = %v", ep, got)
		}
	}
	if got := realnode.UnescapeMount(`/a\040b/c`); got != "/a b/c" {
		t.Errorf("unescapeMount: %q", got)
	}
}

// A joined machine's condition apply keeps what makes it joined: an apply owns only the fields
// it sends, and a NodeDown without initialization.provisioned made the machine join again.
func TestKeptStatus(t *testing.T) {
	yes := true
	lm := &external.LocalMachine{Status: external.LocalMachineStatus{NodeName: "n0",
		Initialization: &external.InfrastructureInitialization{Provisioned: &yes},
		Addresses:      []external.MachineAddress{{Type: "InternalIP", Address: "10.250.0.2"}}}}
	got := keptStatus(lm, PhaseFailed)
	if got["phase"] != PhaseFailed || got["nodeName"] != "n0" || got["initialization"] == nil || len(got["addresses"].([]any)) != 1 {
		t.Errorf("a joined machine's status: %v", got)
	}
	if got := keptStatus(&external.LocalMachine{}, PhasePending); len(got) != 1 {
		t.Errorf("a machine not joined: %v", got)
	}
}

// A node that cannot boot because what it runs is missing says which piece and how to build it,
// before it takes anything of the host: no address lease, no state, no node kept.
func TestRealNodeBootMissingPieces(t *testing.T) {
	bin, images, run := t.TempDir(), t.TempDir(), t.TempDir()
	pause := filepath.Join(images, "pause.oci.tar")
	if err := os.WriteFile(pause, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		images []string
		want   string
	}{
		"an image archive": {[]string{pause, filepath.Join(images, "echo.oci.tar")}, "hack/build-node-images.sh"},
		"the kubelet":      {[]string{pause}, "hack/build-kube.sh kubelet kube-proxy"},
	} {
		r := NewRealNodes(RealNodesOptions{BinDir: bin, Images: c.images, Bridge: "test-no-such-bridge",
			Prefix: netip.MustParsePrefix("10.250.0.0/30"), RunDir: run}, t.TempDir(), nil)
		machineDir := filepath.Join(t.TempDir(), "machine")
		err := r.Boot(context.Background(), "ns/m0", BootSpec{MachineDir: machineDir, NodeName: "m0"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s missing: %v, want it to name %q", name, err, c.want)
		}
		if leases, _ := os.ReadDir(filepath.Join(run, "leases")); len(leases) > 0 {
			t.Errorf("%s missing: %d address leases taken", name, len(leases))
		}
		if _, err := os.Stat(machineDir); !os.IsNotExist(err) {
			t.Errorf("%s missing: the machine's directory was made (%v)", name, err)
		}
		if booted, _ := r.Status("ns/m0"); booted {
			t.Errorf("%s missing: the node is kept as booted", name)
		}
	}
}

// The kubelet's sockets fit a unix socket's 107 bytes whatever the machine's state directory
// (a MachineDeployment's machines have long names): its root directory is under the short run
// directory, where it makes pod-resources/<random> and plugins_registry sockets.
func TestRealNodeSocketsFit(t *testing.T) {
	r := NewRealNodes(RealNodesOptions{RunDir: "/run/butler-nodes"}, "/tmp/state", nil)
	machineDir := "/tmp/butler-e2e-1397296442/machines/rn-bbe3926d/rn-workers-6pspx-7htzp" + strings.Repeat("/long", 20)
	l := r.layout("rn-bbe3926d/rn-workers-6pspx-7htzp", machineDir)
	for _, sock := range []string{l.containerdSock(), filepath.Join(l.kubeletDir(), "pod-resources", "3617752884"),
		filepath.Join(l.kubeletDir(), "plugins_registry", "some-csi-driver-reg.sock")} {
		if len(sock) > 107 {
			t.Errorf("%s: %d bytes, a unix socket's path has at most 107", sock, len(sock))
		}
	}
}

// A node that cannot boot for want of space says which file system, how much is free and how
// much it needs, before it takes anything of the host (as a missing piece): no address lease,
// no state, no node kept.
func TestRealNodeBootNoSpace(t *testing.T) {
	bin, images, run := t.TempDir(), t.TempDir(), t.TempDir()
	pause := filepath.Join(images, "pause.oci.tar")
	for _, f := range []string{pause, filepath.Join(bin, "kubelet"), filepath.Join(bin, "kube-proxy")} {
		if err := os.WriteFile(f, make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]struct {
		full string // the directory whose file system has 5 MiB left
		want string
	}{
		"the state directory's": {"state", "5 MiB free for the machine's state directory"},
		"the run directory's":   {"run", "5 MiB free for the nodes' run directory"},
	} {
		state := t.TempDir()
		r := NewRealNodes(RealNodesOptions{BinDir: bin, Images: []string{pause}, Bridge: "test-no-such-bridge",
			Prefix: netip.MustParsePrefix("10.250.0.0/29"), RunDir: run}, t.TempDir(), nil)
		r.freeSpace = func(path string) (uint64, error) {
			if (c.full == "state") == strings.HasPrefix(path, state) {
				return 5 << 20, nil
			}
			return 100 << 30, nil
		}
		machineDir := filepath.Join(state, "machines", "ns", "m0")
		err := r.Boot(context.Background(), "ns/m0", BootSpec{MachineDir: machineDir, NodeName: "m0"})
		if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "no space left for a node") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s file system full: %v, want it to say %q", name, err, c.want)
		}
		if leases, _ := os.ReadDir(filepath.Join(run, "leases")); len(leases) > 0 {
			t.Errorf("%s file system full: %d address leases taken", name, len(leases))
		}
		if _, err := os.Stat(machineDir); !os.IsNotExist(err) {
			t.Errorf("%s file system full: the machine's directory was made (%v)", name, err)
		}
		if booted, _ := r.Status("ns/m0"); booted {
			t.Errorf("%s file system full: the node is kept as booted", name)
		}
	}
}

// A node that runs out of space midway fails with what the tool or its own write said (ctr's
// import, containerd's log, a file it writes), bytes or inodes; that is told from other failures.
func TestIsNoSpace(t *testing.T) {
	for err, want := range map[error]bool{
		fmt.Errorf("importing /x/pause.oci.tar: %w", errors.New("ctr --address /run/butler-nodes/ab/containerd.sock -n k8s.io images import /x/pause.oci.tar: exit status 1: ctr: failed to ingest \"blobs/sha256/ab\": failed to open writer: mkdir /m/node/containerd/root/io.containerd.content.v1.content/ingest/9f: no space left on device")): true,
		&os.PathError{Op: "write", Path: "/m/node/kubelet-config.yaml", Err: syscall.ENOSPC}:                                                    true,
		&os.PathError{Op: "open", Path: "/m/node/containerd.log", Err: syscall.EDQUOT}:                                                          true,
		fmt.Errorf("containerd did not answer: %s", "open /m/node/containerd/root/io.containerd.metadata.v1.bolt/meta.db: disk quota exceeded"): true,
		fmt.Errorf("%w: 1 MiB free", ErrNoSpace):                                                                                                true,
		&os.PathError{Op: "open", Path: "/m/node/containerd.log", Err: syscall.EACCES}:                                                          false,
		errors.New("the node's network: ip link add butlern0 type bridge: exit status 2: RTNETLINK answers: File exists"):                       false,
		nil: false,
	} {
		if got := isNoSpace(err); got != want {
			t.Errorf("isNoSpace(%v) = %v, want %v", err, got, want)
		}
	}
	midway := outOfSpace(&os.PathError{Op: "mkdir", Path: "/m/node/containerd", Err: syscall.ENOSPC},
		map[string]string{"the machine's state directory": t.TempDir()})
	if !errors.Is(midway, ErrNoSpace) || !errors.Is(midway, syscall.ENOSPC) || !strings.Contains(midway.Error(), "inodes free") {
		t.Errorf("outOfSpace: %v, want ErrNoSpace, the write's error and what is left", midway)
	}
}

// Each node dials a loopback endpoint (the wake-on-request listener's) from a loopback address of
// its own, never the host's 127.0.0.1: the listener counts unestablished connections per client
// address, so one node's pod holding connections open reaches only its own node's bound.
func TestAttackNodesDialTheEndpointAsThemselves(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sources := map[string]string{}
	for _, id := range []string{"a1b2c3", "d4e5f6"} {
		d := nodeDialer(nodeLayout{id: id}, ln.Addr().String())
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("node %s: %v", id, err)
		}
		in, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		host, _, _ := net.SplitHostPort(in.RemoteAddr().String())
		in.Close()
		c.Close()
		if host == "127.0.0.1" || !netip.MustParseAddr(host).IsLoopback() {
			t.Errorf("node %s dials from %s, want a loopback address of its own", id, host)
		}
		sources[host] = id
	}
	if len(sources) != 2 {
		t.Errorf("two nodes dial from one address: %v", sources)
	}
	if d := nodeDialer(nodeLayout{id: "a1b2c3"}, "[::1]:6443"); d.LocalAddr != nil {
		t.Errorf("an IPv6 endpoint gets an IPv4 source %v", d.LocalAddr)
	}
}
