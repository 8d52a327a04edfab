package nodes

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestRealNodeCannotBootOrJoin: a real node that cannot join or boot says why in its
// LocalMachine's condition and leaves nothing on the host between its tries; deleting its machine
// leaves nothing either, and no Node in the tenant, also of a machine that joined but never
// booted. One tenant cluster, four machines, one after the other (each deleted before the next,
// so that what one try makes is not taken for what another left):
//   - rn-small: its state directory is a 1 MiB tmpfs; the provider sees it before the node joins.
//   - rn-inodes: a tmpfs with bytes for the estimate but 50 inodes; the node joins, then runs out
//     midway, when its containerd unpacks the pause image.
//   - rn-badtoken: bootstrap data with a token the tenant does not know; discovery fails (no
//     Node, no address taken).
//   - rn-port: a socket of this test holds the kubelet's port 10250 in the node's network
//     namespace (every port a node listens on is in its own namespace, none on the host's); the
//     node joins, then its boot stops before the kubelet, naming the port and this process.
//
// The tmpfs mounts are the test's (the host's disk is not filled).
func TestRealNodeCannotBootOrJoin(t *testing.T) {
	realNodeRequirements(t)
	realNodeParallel(t)
	env := framework.MachineTenant(t, "rn-noboot", "noboot")
	for _, c := range []realNodeFault{
		{machine: "rn-small", reason: "NodeOutOfSpace", want: []string{"no space left for a node"}, mount: "size=1m"},
		// Bytes beyond the provider's estimate (64 MiB and three times the node images, Flux's
		// too when built), inodes for the join and containerd's start but not an image's unpacking.
		{machine: "rn-inodes", reason: "NodeOutOfSpace", want: []string{"no space left on device"}, registers: true, mount: "size=2g,nr_inodes=50"},
		{machine: "rn-badtoken", reason: "DiscoveryFailed", want: []string{`not signed for token "abcdef"`}, token: "abcdef.0123456789abcdef"},
		{machine: "rn-port", reason: "NodePortTaken", want: []string{":10250", fmt.Sprintf("pid=%d)", os.Getpid())}, registers: true, takePort: true},
	} {
		realNodeCannotBoot(t, env, c)
	}
}

// realNodeFault is a real machine that cannot join or boot, and what its condition says.
type realNodeFault struct {
	machine, reason string
	want            []string // in the condition's message
	registers       bool     // whether the node registered before it failed
	mount, token    string   // a tmpfs's options for the state directory; another token
	takePort        bool
}

// realNodeCannotBoot makes the machine of c, checks its condition, its Node and that nothing is
// left between its tries, then deletes it and checks nothing is left at all.
func realNodeCannotBoot(t *testing.T, env *framework.MachineEnv, c realNodeFault) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(framework.Plane.Dir, "machines", env.Namespace, c.machine)
	var mounts []string
	if c.mount != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, c.mount+",mode=0700"); err != nil {
			t.Fatalf("mounting a tmpfs (%s) at %s: %v", c.mount, dir, err)
		}
		mounts = append(mounts, dir)
		t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	}
	taker := &portTaker{machineDir: dir + "/", addr: "0.0.0.0:10250"}
	defer taker.stop()
	if c.takePort {
		go taker.run()
	}
	token := env.Token
	if c.token != "" {
		token = c.token
	}
	start := time.Now()
	env.Machine(t, c.machine, token, "real")
	message := realNodeFailure(t, env, c.machine, c.reason)
	t.Logf("%s: %s in %s: %s", c.machine, c.reason, time.Since(start).Round(100*time.Millisecond), message)
	for _, want := range append(c.want, mounts...) {
		if !strings.Contains(message, want) {
			t.Errorf("%s: the condition says %q; want it to say %q", c.machine, message, want)
		}
	}
	_, err := env.Tenant.CoreV1().Nodes().Get(ctx, c.machine, metav1.GetOptions{})
	if registered := err == nil; registered != c.registers {
		t.Errorf("%s: a Node registered: %v (%v), want %v", c.machine, registered, err, c.registers)
	}
	// A failed boot is tried again (0.5 s, doubled up to 30 s): what it leaves stays between
	// two tries, what a try makes while it runs does not. A try that imports the node images
	// takes seconds under load, so the gaps long enough to look in come a minute in.
	if ok, left := realNodePoll(time.Minute, func() (bool, string) {
		left := realNodeLeftoversBut(env.Namespace, mounts...)
		return len(left) == 0, strings.Join(left, "\n  ")
	}); !ok {
		t.Errorf("%s left between its tries:\n  %s", c.machine, left)
	}
	// Once its LocalMachine is being deleted nothing boots it again. The test's mount goes once the
	// provider deleted the Node (its record of the Node is in the machine's directory, on the
	// mount), and must go for the machine to be gone (a mount point keeps the directory).
	realNodeDeleteFailed(t, env, c.machine)
	if ok, last := realNodePoll(time.Minute, func() (bool, string) {
		_, err := env.Tenant.CoreV1().Nodes().Get(ctx, c.machine, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	}); !ok {
		t.Errorf("%s's Node is left in the tenant a minute after its machine's delete (%s)", c.machine, last)
	}
	taker.stop()
	for _, m := range mounts {
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
	realNodeWaitGone(t, env, c.machine)
	if left := append(realNodeLeftoversOf(env.Namespace), realNodeStateLeft(env.Namespace, c.machine)...); len(left) > 0 {
		t.Errorf("the deleted machine %s left:\n  %s", c.machine, strings.Join(left, "\n  "))
	}
}

// realNodeFailure waits until the machine's Ready condition is False with reason, and returns its
// message (an error of the test if it does not within a minute).
func realNodeFailure(t *testing.T, env *framework.MachineEnv, machine, reason string) string {
	t.Helper()
	var message string
	ok, last := realNodePoll(time.Minute, func() (bool, string) {
		u, err := env.Dynamic.Resource(external.LocalMachineGVR).Namespace(env.Namespace).Get(context.Background(), machine, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cond := range conds {
			cond := cond.(map[string]any)
			if cond["type"] == "Ready" && cond["status"] == "False" && cond["reason"] == reason {
				message = fmt.Sprint(cond["message"])
				return true, ""
			}
		}
		return false, fmt.Sprint(u.Object["status"])
	})
	if !ok {
		t.Errorf("%s's condition does not say %s after a minute: %s", machine, reason, last)
	}
	return message
}

// realNodePoll is lmWait that does not end the test: whether check passed within timeout, and
// what it said last.
func realNodePoll(timeout time.Duration, check func() (bool, string)) (bool, string) {
	var last string
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		ok, said := check()
		if ok {
			return true, ""
		}
		last = said
		if time.Now().After(deadline) {
			return false, last
		}
	}
}

// realNodeDeleteFailed deletes the machines' Machines and waits until their LocalMachines are
// being deleted: nothing boots them again from then on.
func realNodeDeleteFailed(t *testing.T, env *framework.MachineEnv, machines ...string) {
	t.Helper()
	for _, m := range machines {
		framework.MustKubectl(t, "delete", "-n", env.Namespace, "machines.cluster.x-k8s.io", m, "--wait=false")
	}
	for _, m := range machines {
		framework.WaitFor(t, time.Minute, m+"'s LocalMachine to be deleting", func() (bool, string) {
			u, err := env.Dynamic.Resource(external.LocalMachineGVR).Namespace(env.Namespace).Get(context.Background(), m, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, ""
			}
			if err != nil {
				return false, err.Error()
			}
			return u.GetDeletionTimestamp() != nil, "not yet"
		})
	}
}

// realNodeWaitGone waits until the machines' LocalMachines are gone (the provider removes a
// machine's directory, which a mount point keeps: the test's mounts go first).
func realNodeWaitGone(t *testing.T, env *framework.MachineEnv, machines ...string) {
	t.Helper()
	for _, m := range machines {
		framework.WaitFor(t, time.Minute, m+"'s LocalMachine to be gone", func() (bool, string) {
			_, err := env.Dynamic.Resource(external.LocalMachineGVR).Namespace(env.Namespace).Get(context.Background(), m, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
}

// portTaker holds addr in the network namespace of every boot of one machine's node, from the
// moment its containerd runs (before the kubelet starts): it finds the node's containerd by the
// machine's directory in its command line.
type portTaker struct {
	machineDir, addr string

	mu      sync.Mutex
	stopped bool
	held    map[string]net.Listener // by network namespace (its /proc link)
}

func (p *portTaker) run() {
	for {
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		own, _ := os.Readlink("/proc/self/ns/net")
		for _, pid := range processesNaming(p.machineDir + "node/containerd/") {
			ns := fmt.Sprintf("/proc/%s/ns/net", pid)
			id, err := os.Readlink(ns)
			if err != nil || id == own {
				continue // nsenter before it entered the node's namespace
			}
			p.mu.Lock()
			if _, ok := p.held[id]; !ok && !p.stopped {
				if l, err := listenIn(ns, p.addr); err == nil {
					if p.held == nil {
						p.held = map[string]net.Listener{}
					}
					p.held[id] = l
				}
			}
			p.mu.Unlock()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *portTaker) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	for _, l := range p.held {
		l.Close()
	}
	p.held = nil
}

// processesNaming are the pids whose command line contains s.
func processesNaming(s string) []string {
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		if data, err := os.ReadFile(f); err == nil && strings.Contains(string(data), s) {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}

// listenIn listens on addr in the network namespace at nsPath (listenInNamespace).
func listenIn(nsPath, addr string) (net.Listener, error) {
	netns, err := os.Open(nsPath)
	if err != nil {
		return nil, err
	}
	defer netns.Close()
	return listenInNamespace(netns, addr)
}

// realNodeLeftoversBut is realNodeLeftoversOf(ns) but for the mounts at the given mount points.
func realNodeLeftoversBut(ns string, mountPoints ...string) []string {
	var left []string
	for _, l := range realNodeLeftoversOf(ns) {
		ours := false
		for _, mp := range mountPoints {
			if f := strings.Fields(l); len(f) > 2 && f[0] == "mount" && f[2] == mp {
				ours = true
			}
		}
		if !ours {
			left = append(left, l)
		}
	}
	return left
}
