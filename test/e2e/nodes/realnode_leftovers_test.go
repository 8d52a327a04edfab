package nodes

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// realNodeLeft is one thing real nodes left on the host, and whose it is as far as it tells: a
// machine's namespace (a path under framework.Plane.Dir/machines/<namespace>/), a node's id (its network
// namespace butler-<id>, host veth bn<id>, run directory /run/butler-nodes/<id> and cgroup
// /butler-nodes/<id>: pkg/localprovider/machines' nodeLayout) or an address of the nodes' bridge
// (a lease, a serving certificate, an iptables rule). shared is what is no one node's: the
// nodes' bridge, the cgroups' parent, a host rule naming the bridge or no node's address.
type realNodeLeft struct {
	what         string
	ns, id, addr string
	shared       bool
}

// realNodeIDIn finds a node's id in a command line or a mount: its run directory or its network
// namespace.
var realNodeIDIn = regexp.MustCompile(`/run/(?:butler-nodes/|netns/butler-)([0-9a-f]{10})\b`)

// realNodeAddrIn finds an address of the nodes' bridge network (10.250.0.0/16) in an iptables
// rule, with its prefix length if it has one.
var realNodeAddrIn = regexp.MustCompile(`10\.250\.\d+\.\d+(/\d+)?`)

// realNodeLeftovers lists what real nodes of this plane left on the host, whoever's.
func realNodeLeftovers() []string {
	var left []string
	for _, l := range realNodeLeftItems() {
		left = append(left, l.what)
	}
	return left
}

// realNodeLeftoversOf lists what the real nodes of the machines of namespace ns left on the host:
// everything realNodeLeftovers lists but what is shared (realNodeParallel checks that) and what
// belongs to a machine of another namespace that exists (another test's live node). What tells
// no owner counts as ns's. A machine's directory is there before its node takes anything and
// goes after its node was cleaned up, so the owners are read before and after the leftovers.
func realNodeLeftoversOf(ns string) []string {
	owners, _ := realNodeOwners()
	items := realNodeLeftItems()
	after, _ := realNodeOwners()
	maps.Copy(owners, after)
	leased := map[string]string{} // address -> node id
	for _, l := range items {
		if strings.HasPrefix(l.what, "address lease ") {
			leased[l.addr] = l.id
		}
	}
	var left []string
	for _, l := range items {
		owner := l.ns
		if id := l.id; owner == "" {
			if id == "" {
				id = leased[l.addr]
			}
			owner = owners[id]
		}
		if !l.shared && (owner == "" || owner == ns) {
			left = append(left, l.what)
		}
	}
	return left
}

// realNodeOwners maps the node id of every machine directory of the plane to the machine's
// namespace (the provider's id: a hash of its state directory, framework.Plane.Dir, and the machine's
// key). A node's containerd configuration names its run directory: mismatch names a machine
// whose id is not the one there (an error of this test, said with every leftover list).
func realNodeOwners() (owners map[string]string, mismatch string) {
	owners = map[string]string{}
	dirs, _ := filepath.Glob(filepath.Join(framework.Plane.Dir, "machines", "*", "*"))
	for _, dir := range dirs {
		ns, name := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
		sum := sha256.Sum256([]byte(framework.Plane.Dir + "\x00" + ns + "/" + name))
		id := hex.EncodeToString(sum[:])[:10]
		owners[id] = ns
		if conf, err := os.ReadFile(filepath.Join(dir, "node", "containerd", "config.toml")); err == nil &&
			!strings.Contains(string(conf), "/run/butler-nodes/"+id+"/") {
			mismatch = ns + "/" + name
		}
	}
	return owners, mismatch
}

// realNodeLeftItems lists what real nodes of this plane left on the host, each with whose it is.
func realNodeLeftItems() []realNodeLeft {
	var left []realNodeLeft
	machines := filepath.Join(framework.Plane.Dir, "machines") + "/"
	whose := func(what, in string) realNodeLeft {
		l := realNodeLeft{what: what}
		if _, rest, ok := strings.Cut(in, machines); ok {
			l.ns, _, _ = strings.Cut(rest, "/")
		}
		if m := realNodeIDIn.FindStringSubmatch(in); m != nil {
			l.id = m[1]
		}
		return l
	}
	if _, m := realNodeOwners(); m != "" {
		left = append(left, realNodeLeft{what: "node id: this test's id of machine " + m + "'s node is not the one its containerd's configuration names; no leftover is told apart"})
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		data, err := os.ReadFile(f)
		cmd := strings.ReplaceAll(string(data), "\x00", " ")
		if err == nil && (strings.Contains(cmd, machines) || strings.Contains(cmd, "/run/butler-nodes/")) {
			left = append(left, whose("process "+filepath.Base(filepath.Dir(f))+": "+cmd, cmd))
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	for _, m := range strings.Split(string(mounts), "\n") {
		// (ip netns add's mount is at /run/netns where /var/run is /run's link)
		if strings.Contains(m, machines) || strings.Contains(m, "/run/butler-nodes/") || strings.Contains(m, "/run/netns/butler-") {
			left = append(left, whose("mount "+m, m))
		}
	}
	netns, _ := filepath.Glob("/var/run/netns/butler-*")
	for _, n := range netns {
		left = append(left, realNodeLeft{what: "network namespace " + n, id: strings.TrimPrefix(filepath.Base(n), "butler-")})
	}
	// An address on the nodes' bridge is leased while a node holds it (a file named by it,
	// holding the node's id).
	leases, _ := filepath.Glob("/run/butler-nodes/leases/*")
	for _, f := range leases {
		id, _ := os.ReadFile(f)
		left = append(left, realNodeLeft{what: "address lease " + f + " (node " + string(id) + ")", id: string(id), addr: filepath.Base(f)})
	}
	left = append(left, realNodeDirsLeft()...)
	left = append(left, realNodeCgroupsLeft()...)
	if links, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, l := range strings.Split(string(links), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			switch {
			case strings.HasPrefix(name, "butlern0"):
				left = append(left, realNodeLeft{what: "link " + f[1], shared: true})
			case strings.HasPrefix(name, "bn"):
				left = append(left, realNodeLeft{what: "link " + f[1], id: strings.TrimPrefix(name, "bn")})
			}
		}
	}
	// The kubelet's default --cert-dir is the host's, whatever its --root-dir: a real node's
	// serving certificate (of an address on the nodes' bridge) or key there, of any run (the 12
	// of clusters deleted before e87f9c6 were removed on 2026-11-29).
	served, _ := filepath.Glob("/var/lib/kubelet/pki/kubelet-*")
	for _, f := range served {
		if addr := realNodeServingAddr(f); addr != "" {
			left = append(left, realNodeLeft{what: "serving certificate and key " + f + " (of " + addr + ")", addr: addr})
		}
	}
	// The provider writes no rule of the host's: one naming the bridge or the whole network is
	// everyone's, one naming a node's address that node's.
	if rules, err := exec.Command("iptables-save").Output(); err == nil {
		for _, r := range strings.Split(string(rules), "\n") {
			if strings.Contains(r, "butlern0") || strings.Contains(r, "10.250.") {
				l := realNodeLeft{what: "iptables " + r, shared: strings.Contains(r, "butlern0")}
				if m := realNodeAddrIn.FindStringSubmatch(r); m != nil && (m[1] == "" || m[1] == "/32") {
					l.addr = strings.TrimSuffix(m[0], "/32")
				} else {
					l.shared = true
				}
				left = append(left, l)
			}
		}
	}
	return left
}

// realNodeDirsLeft lists the nodes' own directories and the keys in them: a node's run
// directory holds its kubelet's certificate directory (serving key and certificate) and root
// (its pods' tokens), its state directory containerd's; a machine's state directory (its node
// client key) stays while the machine does, not its node's.
func realNodeDirsLeft() []realNodeLeft {
	var left []realNodeLeft
	runDirs, _ := filepath.Glob("/run/butler-nodes/*")
	for _, dir := range runDirs {
		if filepath.Base(dir) != "leases" {
			left = append(left, realNodeLeft{what: "node directory " + dir + ": " + strings.Join(filesUnder(dir, 5), " "), id: filepath.Base(dir)})
		}
	}
	nodeDirs, _ := filepath.Glob(filepath.Join(framework.Plane.Dir, "machines", "*", "*", "node"))
	for _, dir := range nodeDirs {
		left = append(left, realNodeLeft{what: "node directory " + dir + ": " + strings.Join(filesUnder(dir, 5), " "),
			ns: filepath.Base(filepath.Dir(filepath.Dir(dir)))})
	}
	return left
}

// realNodeCgroupsLeft lists the nodes' cgroups (/butler-nodes/<id> in each hierarchy, cgroup
// v1's or v2's) and their parent, which every node shares and the last one's cleanup removes.
func realNodeCgroupsLeft() []realNodeLeft {
	var left []realNodeLeft
	parents, _ := filepath.Glob("/sys/fs/cgroup/*/butler-nodes")
	if _, err := os.Stat("/sys/fs/cgroup/butler-nodes"); err == nil {
		parents = append(parents, "/sys/fs/cgroup/butler-nodes")
	}
	for _, p := range parents {
		left = append(left, realNodeLeft{what: "cgroup " + p, shared: true})
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			if e.IsDir() {
				left = append(left, realNodeLeft{what: "cgroup " + filepath.Join(p, e.Name()), id: e.Name()})
			}
		}
	}
	return left
}

// filesUnder names at most max files under dir, its keys first (*.key, *.pem, token), and says
// when there are more. The walk stops there: it runs in polls, over containerd's image content.
func filesUnder(dir string, max int) []string {
	var keys, others []string
	more := false
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if len(keys)+len(others) == 4*max {
			more = true
			return filepath.SkipAll
		}
		if ext := filepath.Ext(p); ext == ".key" || ext == ".pem" || d.Name() == "token" {
			keys = append(keys, p)
		} else {
			others = append(others, p)
		}
		return nil
	})
	all := append(keys, others...)
	if more || len(all) > max {
		return append(all[:min(max, len(all))], "and more")
	}
	return all
}

// realNodeServingAddr is the address of the real nodes' bridge (10.250.0.0/16) a certificate in
// the PEM file is for, if any.
func realNodeServingAddr(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			continue
		}
		for _, ip := range cert.IPAddresses {
			if ip.To4() != nil && ip.To4()[0] == 10 && ip.To4()[1] == 250 {
				return ip.String()
			}
		}
	}
	return ""
}

// realNodeTests counts the real-node tests that began and have not ended (realNodeParallel), and
// whether one of those that ended failed.
var realNodeTests struct {
	sync.Mutex
	running int
	failed  bool
}

// realNodeParallel runs t beside the other real-node tests under make test-realnode and CI's
// test-realnode-faults (BUTLER_E2E_REALNODE), after the sequential tests (the fault tests, and
// TestRealNodeFigures, which measures), and alone elsewhere as before. Each test checks what its
// own machines left (realNodeLeftoversOf: another's live nodes are not its leftovers); what no
// one node has (the nodes' bridge, the cgroups' parent, the host's rules naming the bridge) is
// there while any node runs, so the last of them to end checks everything realNodeLeftovers
// lists. Call it after the test's skips and before it makes anything: its check is the last
// cleanup.
func realNodeParallel(t *testing.T) {
	t.Helper()
	realNodeTests.Lock()
	realNodeTests.running++
	realNodeTests.Unlock()
	t.Cleanup(func() {
		realNodeTests.Lock()
		defer realNodeTests.Unlock()
		realNodeTests.failed = realNodeTests.failed || t.Failed()
		if realNodeTests.running--; realNodeTests.running > 0 {
			return
		}
		if left := realNodeLeftovers(); len(left) > 0 {
			why := ""
			if realNodeTests.failed {
				why = " (a real-node test failed: its cluster may still be being deleted)"
			}
			t.Errorf("the real-node tests ended%s and real nodes left:\n  %s", why, strings.Join(left, "\n  "))
		}
	})
	if os.Getenv("BUTLER_E2E_REALNODE") != "" {
		t.Parallel()
	}
}
