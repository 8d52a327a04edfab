package machines

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// fakeStarts stands in for a booted node's kubelet and kube-proxy starts: while taken, the
// kubelet's start fails as checkPorts fails on a socket holding its port; otherwise each starts
// a sleeping process as the node's.
type fakeStarts struct {
	mu      sync.Mutex
	taken   bool
	tries   int // the kubelet's
	started []string
}

func (f *fakeStarts) install(t *testing.T, r *RealNodes) {
	for _, name := range []string{"kubelet", "kube-proxy"} {
		r.starts[name] = func(ctx context.Context, key string, n *realNode, spec BootSpec) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if name == "kubelet" {
				f.tries++
			}
			if f.taken && name == "kubelet" {
				return fmt.Errorf(`%w: the kubelet cannot listen on 10.250.0.2:10250 in the node's network namespace butler-x: a socket of users:(("hostnet",pid=4242,fd=3)) holds it`, ErrPortTaken)
			}
			sleeping(t, r, n, name)
			f.started = append(f.started, name)
			return nil
		}
	}
}

func (f *fakeStarts) set(taken bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.taken = taken
}

// sleeping runs a sleep as the node's process name (its kubelet or kube-proxy).
func sleeping(t *testing.T, r *RealNodes, n *realNode, name string) {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &nodeProc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done })
	r.mu.Lock()
	n.procs[name] = p
	r.mu.Unlock()
}

// readyConditions records the Ready conditions of the machine's status applies, in order.
type readyConditions struct {
	mu    sync.Mutex
	conds []metav1.Condition
}

func (rc *readyConditions) last(t *testing.T) metav1.Condition {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.conds) == 0 {
		t.Fatal("no status apply of the machine")
	}
	return rc.conds[len(rc.conds)-1]
}

// restartController is a controller of one booted real machine, its status applies recorded.
func restartController(t *testing.T, r *RealNodes, state string) (*Controller, *readyConditions) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{LocalMachinesResource: "LocalMachineList"})
	applied := &readyConditions{}
	dyn.PrependReactor("patch", "localmachines", func(action k8stesting.Action) (bool, runtime.Object, error) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(action.(k8stesting.PatchAction).GetPatch()); err != nil {
			t.Errorf("the status apply: %v", err)
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			var cond metav1.Condition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(c.(map[string]any), &cond); err == nil && cond.Type == ConditionReady {
				applied.mu.Lock()
				applied.conds = append(applied.conds, cond)
				applied.mu.Unlock()
			}
		}
		return true, u, nil
	})
	empty := func() cache.GenericLister {
		return cache.NewGenericLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}), LocalMachinesResource.GroupResource())
	}
	c := &Controller{dyn: dyn, nodes: r, joiner: NewJoiner(), capiClusters: empty(), clusters: empty(),
		opts: Options{StateDir: state, RetryAfter: time.Millisecond, MaxRetryAfter: time.Millisecond}}
	return c, applied
}

// A socket that takes a real node's kubelet port while the kubelet restarts (a credentials
// rotation restarts it, and a hostNetwork pod may bind the port the moment it is free): the
// machine's condition says NodePortTaken, naming the port and the holder, at once; the start is
// tried again at each look while the port is held, and once it is free the kubelet and
// kube-proxy run and the condition says so. Before, the node stayed without its kubelet until
// its machine was replaced.
func TestRestartRetriesATakenPort(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	r := NewRealNodes(RealNodesOptions{Bridge: "test-no-such-bridge", Prefix: netip.MustParsePrefix("10.250.0.0/29"), RunDir: t.TempDir()}, state, nil)
	starts := &fakeStarts{}
	starts.install(t, r)
	c, applied := restartController(t, r, state)
	key := "ns/m0"
	lm := &external.LocalMachine{ObjectMeta: metav1.ObjectMeta{Name: "m0", Namespace: "ns", Generation: 1}}
	machineDir := c.machineDir(lm)
	if err := os.MkdirAll(machineDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeBootSpec(BootSpec{MachineDir: machineDir, NodeName: "m0", Cluster: "ns/c"}); err != nil {
		t.Fatal(err)
	}
	n := &realNode{layout: r.layout(key, machineDir), procs: map[string]*nodeProc{}, cluster: "ns/c"}
	r.nodes[key] = n
	sleeping(t, r, n, "kubelet")
	sleeping(t, r, n, "kube-proxy")

	starts.set(true)
	_ = c.restartRealNode(ctx, key, lm)
	cond := applied.last(t)
	if cond.Status != metav1.ConditionFalse || cond.Reason != ReasonNodePortTaken || !strings.Contains(cond.Message, "10.250.0.2:10250") || !strings.Contains(cond.Message, "pid=4242") {
		t.Fatalf("the restart's condition: %s %s %q; want False NodePortTaken naming the port and the holder", cond.Status, cond.Reason, cond.Message)
	}
	lm.Status.Conditions = []metav1.Condition{cond} // as the informer shows it next
	_ = c.keepJoined(ctx, key, lm, true)
	if starts.tries < 2 {
		t.Errorf("the kubelet's start was tried %d times while its port was taken; want it tried again at each look", starts.tries)
	}
	if cond := applied.last(t); cond.Reason != ReasonNodePortTaken {
		t.Errorf("while the port is taken the condition says %s %q", cond.Reason, cond.Message)
	}

	starts.set(false)
	_ = c.keepJoined(ctx, key, lm, true)
	if !slices.Equal(starts.started, []string{"kubelet", "kube-proxy"}) {
		t.Fatalf("once the port was free the node started %v; want its kubelet and kube-proxy", starts.started)
	}
	if cond := applied.last(t); cond.Status != metav1.ConditionTrue {
		t.Errorf("once the kubelet runs again the condition says %s %s %q; want True", cond.Status, cond.Reason, cond.Message)
	}
	if booted, down := r.Status(key); !booted || down != "" {
		t.Errorf("the node: booted %v, down %q", booted, down)
	}
	tries := starts.tries
	lm.Status.Conditions = []metav1.Condition{applied.last(t)}
	_ = c.keepJoined(ctx, key, lm, true)
	if starts.tries != tries {
		t.Error("a node whose kubelet runs again is started once more")
	}
}

// A node's process that exits because the provider stops it (a failed boot's cleanup, a stop, a
// restart) does not bring its machine back at once: a failed boot is tried again after the
// joins' backoff (before, each cleanup's stop of containerd queued the machine again, and the
// next try began at once, so the node was almost never without one). An exit the provider did
// not ask for does, with the node down.
func TestNodeProcessExitBringsTheMachineBackOnlyWhenUnasked(t *testing.T) {
	var mu sync.Mutex
	brought := 0
	r := NewRealNodes(RealNodesOptions{RunDir: t.TempDir()}, t.TempDir(), func(string) { mu.Lock(); brought++; mu.Unlock() })
	n := &realNode{layout: r.layout("ns/m0", t.TempDir()), procs: map[string]*nodeProc{}, cancel: func() {}}
	run := func() *nodeProc {
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &nodeProc{cmd: cmd, done: make(chan struct{})}
		n.wg.Add(1)
		go r.waitProc("ns/m0", n, "containerd", p, io.NopCloser(nil))
		return p
	}
	stopped := run()
	r.mu.Lock()
	n.cancel = nil // stopNode's first step
	r.mu.Unlock()
	stopped.terminate(time.Second)
	n.wg.Wait()
	mu.Lock()
	if brought != 0 || n.down != "" {
		t.Errorf("a process the provider stopped: the machine brought back %d times, the node down %q", brought, n.down)
	}
	mu.Unlock()

	n.cancel = func() {}
	died := run()
	_ = died.cmd.Process.Kill()
	n.wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if brought != 1 || !strings.HasPrefix(n.down, "containerd exited") {
		t.Errorf("a process that died: the machine brought back %d times, the node down %q; want once, down", brought, n.down)
	}
}
