package controlplane

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sleepSpec is a process that runs until it is stopped; its command line names dir, as a tenant
// process names its state directory.
func sleepSpec(dir string) process.Spec {
	return process.Spec{Component: "sleeper", Binary: "/bin/sh", Args: []string{"-c", "while :; do sleep 0.2; done", dir},
		LogFile: filepath.Join(dir, "sleeper.log"), PidFile: filepath.Join(dir, "sleeper.pid"), Owner: dir}
}

// A supervisor that finds a running process recorded with the same command line adopts it
// instead of starting a second one; with another command line, it replaces it.
// A tenant whose kube-apiserver finds its port taken before the endpoint was published gets
// another port, its processes stopped to start again on it; the record follows.
func TestMovePortAfterBindFailure(t *testing.T) {
	dir := t.TempDir()
	takenPort := 0
	ports, err := localports.NewAllocator(localports.Range{Min: 30000, Max: 30010})
	if err != nil {
		t.Fatal(err)
	}
	// Every port is free but the one kube-apiserver finds taken.
	ports.Available = func(port int) bool { return port != takenPort }
	c := &Controller{ports: ports}
	old, err := ports.Allocate("uid")
	if err != nil {
		t.Fatal(err)
	}
	takenPort = old
	pl := &plane{rec: tenantRecord{UID: "uid", Port: old}, paths: tenantPaths{dir: dir}, notify: func() {}}
	// What kube-apiserver prints when its secure port is taken, then it exits.
	failing := process.Spec{Component: componentAPIServer, Binary: "/bin/sh",
		Args:    []string{"-c", fmt.Sprintf("echo 'failed to listen on 127.0.0.1:%d: listen tcp 127.0.0.1:%d: bind: address already in use'; exit 1", old, old), dir},
		LogFile: filepath.Join(dir, "kube-apiserver.log"), PidFile: filepath.Join(dir, "kube-apiserver.pid"), Owner: dir}
	pl.ensure(context.Background(), "v1.36.3", nil, []process.Spec{failing, sleepSpec(dir)})
	defer pl.stop()
	waitFor(t, "the bind failure to be seen", pl.apiServerPortTaken)

	if err := c.movePort(context.Background(), pl); err != nil {
		t.Fatal(err)
	}
	if pl.port() == old {
		t.Fatalf("the port stayed %d", old)
	}
	if rec, err := readRecord(dir); err != nil || rec.Port != pl.port() {
		t.Errorf("recorded %+v, %v; want port %d", rec, err, pl.port())
	}
	if pl.procs != nil {
		t.Error("the processes were not stopped to start on the new port")
	}
	if !ports.Claim(old, "another") {
		t.Error("the old port is still held for the tenant")
	}
}

// A stop that comes while the process is being started (before it is recorded as running) still
// ends it: it used to find nothing running, and the supervisor then waited on the process forever.
// The controllers' first start waits for kube-apiserver to answer /readyz, and the plane is not
// ready until they run.
func TestControllersStartOnceAPIServerServes(t *testing.T) {
	dir := t.TempDir()
	spec := func(component string) process.Spec {
		s := sleepSpec(dir)
		s.Component, s.LogFile, s.PidFile = component, filepath.Join(dir, component+".log"), filepath.Join(dir, component+".pid")
		return s
	}
	specs := []process.Spec{spec(componentAPIServer), spec(componentControllerManager), spec(componentScheduler)}
	pl := &plane{rec: tenantRecord{UID: "uid", Port: 1}, paths: tenantPaths{dir: dir}, notify: func() {}}
	defer pl.stop()
	pl.ensure(context.Background(), "v1.36.3", nil, specs)
	waitFor(t, "kube-apiserver to run", func() bool {
		pl.mu.Lock()
		defer pl.mu.Unlock()
		_, running, _ := pl.procs[componentAPIServer].State()
		return running
	})
	pl.mu.Lock()
	started := len(pl.procs)
	pl.mu.Unlock()
	if started != 1 {
		t.Fatalf("%d processes started before kube-apiserver serves, want kube-apiserver alone", started)
	}
	if ready, _, _ := pl.status(); ready {
		t.Fatal("ready with only kube-apiserver running")
	}

	// kube-apiserver answers: the probe (which finds nothing at port 1) is stopped, and its answer
	// is set by hand.
	pl.mu.Lock()
	pl.probe()
	pl.probe = func() {}
	pl.mu.Unlock()
	time.Sleep(100 * time.Millisecond) // a probe under way sets its answer first
	pl.mu.Lock()
	pl.setReadyLocked(true)
	pl.mu.Unlock()
	pl.ensure(context.Background(), "v1.36.3", nil, specs)
	waitFor(t, "every process to run once kube-apiserver serves", func() bool { ready, _, _ := pl.status(); return ready })
}

// The probe notes kube-apiserver's first answer, before /readyz passes, and queues the tenant
// for it (the join setup goes in then); ready is still only /readyz's 200.
func TestProbeNotesTheFirstAnswer(t *testing.T) {
	var readyz atomic.Bool
	var answers, notified atomic.Int32
	port, caPEM := readyzServer(t, readyz.Load, &answers)
	pl, s := probedAPIServer(t, port, func() { notified.Add(1) })
	if pl.answeredStart() != 0 {
		t.Fatal("answered before it started")
	}
	pl.ensure(context.Background(), "v1.36.3", caPEM, []process.Spec{s})
	waitFor(t, "the first answer", func() bool { return pl.answeredStart() == 1 })
	if ready, _, _ := pl.status(); ready {
		t.Fatal("ready on a 500 from /readyz")
	}
	waitFor(t, "the tenant to be queued for the first answer", func() bool { return notified.Load() > 0 })

	readyz.Store(true)
	waitFor(t, "ready on /readyz's 200", func() bool { ready, _, _ := pl.status(); return ready })
	if pl.answeredStart() != 1 {
		t.Errorf("answered start %d, want 1", pl.answeredStart())
	}
}

// A new kube-apiserver (another version, a rotation's flags, a start after a stop) forgets the
// start counts: it counts from 1 again, and the join setup done for the last one's first start
// must not pass for its own.
func TestNewAPIServerForgetsTheStartCounts(t *testing.T) {
	dir := t.TempDir()
	apiServer := sleepSpec(dir)
	apiServer.Component, apiServer.PidFile = componentAPIServer, filepath.Join(dir, "kube-apiserver.pid")
	pl := &plane{rec: tenantRecord{UID: "uid", Port: 1}, paths: tenantPaths{dir: dir}, notify: func() {}}
	defer pl.stop()
	for i, version := range []string{"v1.36.3", "v1.36.4"} {
		pl.ensure(context.Background(), version, nil, []process.Spec{apiServer})
		pl.mu.Lock()
		pl.probe()
		pl.probe = func() {}
		pl.mu.Unlock()
		time.Sleep(100 * time.Millisecond) // a probe under way sets its answer first
		if pl.setUp(1) || pl.answeredStart() != 0 {
			t.Errorf("kube-apiserver %d's first start counts as set up (%v) or answered (%d)", i+1, pl.setUp(1), pl.answeredStart())
		}
		pl.mu.Lock()
		pl.answered, pl.readyStarts = 1, 1
		pl.mu.Unlock()
		pl.markSetUp(1)
		apiServer.Args = append(apiServer.Args, "--v=2") // another process
	}
}

// A serving kube-apiserver whose /readyz fails once or twice (a slow answer on a loaded machine)
// stays ready; it is not ready after probeFailures failures in a row, and ready again at the
// next 200.
func TestProbeToleratesAFailureOrTwo(t *testing.T) {
	var failing atomic.Bool
	var answers atomic.Int32
	port, caPEM := readyzServer(t, func() bool { return !failing.Load() }, &answers)
	pl, s := probedAPIServer(t, port, func() {})
	pl.ensure(context.Background(), "v1.36.3", caPEM, []process.Spec{s})
	waitFor(t, "ready", func() bool { ready, _ := pl.serving(); return ready })

	failing.Store(true)
	from := answers.Load()
	waitFor(t, "not ready after the failures in a row", func() bool {
		failed := answers.Load() - from // read before the readiness those answers made
		if ready, _ := pl.serving(); !ready {
			if failed < probeFailures {
				t.Fatalf("not ready after %d failed probes, want ready until %d", failed, probeFailures)
			}
			return true
		}
		return false
	})
	failing.Store(false)
	waitFor(t, "ready again at the next answer", func() bool { ready, _ := pl.serving(); return ready })
}

// The probe asks every probeListening until kube-apiserver answers, then doubles its interval up
// to probeAnswering while /readyz is not 200, every probeReady once it is, and fast again for a
// new start that has not answered.
func TestProbeSchedule(t *testing.T) {
	type step struct {
		ready, answered bool
		want            time.Duration
	}
	ms := time.Millisecond
	steps := []step{
		{false, false, 20 * ms}, {false, false, 20 * ms}, // connection refused
		{false, true, 40 * ms}, {false, true, 80 * ms}, {false, true, 160 * ms}, // 500s
		{false, true, 200 * ms}, {false, true, 200 * ms},
		{true, true, 2 * time.Second},
		{false, true, 200 * ms}, // a serving one not ready any more
		{false, false, 20 * ms}, // a new start
	}
	last := probeListening
	for i, s := range steps {
		if last = nextProbeInterval(last, s.ready, s.answered); last != s.want {
			t.Errorf("step %d (ready %v, answered %v): interval %s, want %s", i, s.ready, s.answered, last, s.want)
		}
	}
}

// A kube-apiserver answering 500 (its post-start hooks running) is asked a few times a second,
// not 50: each answer runs its readiness checks while it starts.
func TestProbeBacksOffWhileNotReady(t *testing.T) {
	var readyz atomic.Bool
	var answers atomic.Int32
	port, caPEM := readyzServer(t, readyz.Load, &answers)
	pl, s := probedAPIServer(t, port, func() {})
	pl.ensure(context.Background(), "v1.36.3", caPEM, []process.Spec{s})
	waitFor(t, "the first answer", func() bool { return pl.answeredStart() == 1 })
	from := answers.Load()
	time.Sleep(time.Second)
	// 40+80+160+200+200+200 ms: 6 probes in the second (a loaded machine makes fewer).
	if n := answers.Load() - from; n > 8 {
		t.Errorf("%d probes in the second after the first 500, want at most 8", n)
	}
	readyz.Store(true)
	waitFor(t, "ready on /readyz's 200", func() bool { ready, _ := pl.serving(); return ready })
}

// readyzServer is a TLS /readyz that answers 200 while ok says so and 500 otherwise, and counts
// its answers; it returns its port and CA.
func readyzServer(t *testing.T, ok func() bool, answers *atomic.Int32) (int, []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		answers.Add(1)
		if !ok() {
			http.Error(w, "[-]poststarthook/rbac/bootstrap-roles failed: reason withheld", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// probedAPIServer is a kube-apiserver process (a sleep) of a plane whose probe asks port.
func probedAPIServer(t *testing.T, port int, notify func()) (*plane, process.Spec) {
	t.Helper()
	dir := t.TempDir()
	s := sleepSpec(dir)
	s.Component = componentAPIServer
	pl := &plane{rec: tenantRecord{UID: "uid", Port: port}, paths: tenantPaths{dir: dir}, notify: notify}
	t.Cleanup(pl.stop)
	return pl, s
}

func TestPlaneReadyChannel(t *testing.T) {
	pl := &plane{}
	ready, ch := pl.serving()
	if ready || closed(ch) {
		t.Fatalf("a new plane: ready %v, channel closed %v", ready, closed(ch))
	}
	pl.mu.Lock()
	pl.setReadyLocked(true)
	pl.setReadyLocked(true) // twice: no double close
	pl.mu.Unlock()
	if !closed(ch) {
		t.Fatal("the channel a waiter holds is not closed once ready")
	}
	pl.mu.Lock()
	pl.setReadyLocked(false)
	pl.mu.Unlock()
	if ready, ch2 := pl.serving(); ready || closed(ch2) {
		t.Fatalf("after not ready: ready %v, channel closed %v", ready, closed(ch2))
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
