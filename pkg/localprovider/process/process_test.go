package process

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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

func sleepSpec(dir string) Spec {
	return Spec{Component: "sleeper", Binary: "/bin/sh", Args: []string{"-c", "while :; do sleep 0.2; done", dir},
		LogFile: filepath.Join(dir, "sleeper.log"), PidFile: filepath.Join(dir, "sleeper.pid"), Owner: dir}
}

func TestProcessRestartsAndStops(t *testing.T) {
	dir := t.TempDir()
	var changes atomic.Int32
	p := Start(context.Background(), sleepSpec(dir), func() { changes.Add(1) })
	waitFor(t, "the process to run", func() bool { _, running, _ := p.State(); return running })
	pid, _, _ := p.State()
	if rec, ok := ReadPidRecord(filepath.Join(dir, "sleeper.pid")); !ok || rec.PID != pid || rec.Hash != sleepSpec(dir).Hash() {
		t.Fatalf("pid file %+v, want pid %d", rec, pid)
	}

	// Killed: it is started again (after the first backoff), as a new process.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a restart", func() bool { newPid, running, starts := p.State(); return running && starts == 2 && newPid != pid })
	if changes.Load() < 3 {
		t.Errorf("onChange called %d times for start, exit, start", changes.Load())
	}

	newPid, _, _ := p.State()
	p.Stop()
	if Alive(newPid, "") {
		t.Error("the process runs after stop")
	}
	if _, err := os.Stat(filepath.Join(dir, "sleeper.pid")); !os.IsNotExist(err) {
		t.Errorf("pid file after stop: %v", err)
	}
}

func TestProcessAdoption(t *testing.T) {
	dir := t.TempDir()
	first := Start(context.Background(), sleepSpec(dir), func() {})
	waitFor(t, "the process to run", func() bool { _, running, _ := first.State(); return running })
	pid, _, _ := first.State()
	// The provider "crashes": its supervisor goes away without stopping the process.
	close(first.stopCh)

	second := Start(context.Background(), sleepSpec(dir), func() {})
	waitFor(t, "adoption", func() bool { _, running, _ := second.State(); return running })
	if got, _, _ := second.State(); got != pid {
		t.Fatalf("second supervisor runs pid %d, want the adopted %d", got, pid)
	}
	// The adopted process exits: the supervisor notices and starts its own.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a restart of the adopted process", func() bool { p, running, _ := second.State(); return running && p != pid })
	adoptedPid, _, _ := second.State()
	// The second provider crashes too; its child lives on, for the third to find.
	close(second.stopCh)

	changed := sleepSpec(dir)
	changed.Args = append(changed.Args, "other")
	third := Start(context.Background(), changed, func() {})
	waitFor(t, "the replacement", func() bool { p, running, _ := third.State(); return running && p != adoptedPid })
	if Alive(adoptedPid, "") {
		t.Error("the process with the old command line still runs")
	}
	third.Stop()
}

func TestAliveChecksOwner(t *testing.T) {
	if !Alive(os.Getpid(), "") {
		t.Error("this process is not alive")
	}
	if Alive(os.Getpid(), "/no/such/tenant/dir") {
		t.Error("a process whose command line lacks the owner was taken for the tenant's")
	}
}

func TestLastRunFailedToBind(t *testing.T) {
	log := filepath.Join(t.TempDir(), "x.log")
	for _, c := range []struct {
		content string
		want    bool
	}{
		{"", false},
		{"\n==== start\nlisten tcp 127.0.0.1:1: bind: address already in use\n", true},
		// An earlier run failed, the last one did not (yet).
		{"\n==== start\nbind: address already in use\n\n==== start\nserving\n", false},
	} {
		if err := os.WriteFile(log, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := LastRunFailedToBind(log); got != c.want {
			t.Errorf("LastRunFailedToBind(%q) = %v", c.content, got)
		}
	}
}

func TestStopWhileStarting(t *testing.T) {
	for i := range 20 {
		dir := t.TempDir()
		p := Start(context.Background(), sleepSpec(dir), func() {})
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: stop did not return", i)
		}
		if pid, _, _ := p.State(); pid > 0 && Alive(pid, dir) {
			t.Fatalf("round %d: the process %d runs after stop", i, pid)
		}
	}
}

// TestEnvReachesTheProcess: Spec.Env is added to the provider's environment (which the process
// keeps), and another Env is another process: the supervisor replaces a running one.
func TestEnvReachesTheProcess(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PROVIDER_SETTING", "kept")
	out := filepath.Join(dir, "env")
	spec := Spec{Component: "env", Binary: "/bin/sh",
		Args:    []string{"-c", `echo "$GOGC $PROVIDER_SETTING" > "$0"; while :; do sleep 0.2; done`, out},
		Env:     []string{"GOGC=50"},
		LogFile: filepath.Join(dir, "env.log"), PidFile: filepath.Join(dir, "env.pid"), Owner: dir}
	p := Start(context.Background(), spec, func() {})
	defer p.Stop()
	waitFor(t, "the process to write its environment", func() bool { data, _ := os.ReadFile(out); return len(data) > 0 })
	if data, _ := os.ReadFile(out); string(data) != "50 kept\n" {
		t.Errorf("the process saw GOGC and PROVIDER_SETTING %q, want \"50 kept\"", data)
	}
	without := spec
	without.Env = nil
	if spec.Hash() == without.Hash() {
		t.Error("a spec with Env has the hash of one without: a running process would keep its old environment")
	}
}

// termSpec is a process that exits wait after SIGTERM, or with wait "" ignores SIGTERM. It makes
// dir/ready once its trap is set.
func termSpec(dir, wait string) Spec {
	s := sleepSpec(dir)
	handler := "''"
	if wait != "" {
		handler = "'sleep " + wait + "; exit 0'"
	}
	s.Args = []string{"-c", "trap " + handler + ` TERM; touch "$0/ready"; while :; do sleep 0.05; done`, dir}
	return s
}

// waitTrapped waits until termSpec's process in dir has set its trap.
func waitTrapped(t *testing.T, dir string) {
	t.Helper()
	waitFor(t, "the process to set its trap", func() bool { _, err := os.Stat(filepath.Join(dir, "ready")); return err == nil })
}

// A stop returns when the process has exited, not after a fixed grace: one that takes 300 ms
// over its SIGTERM is stopped in about that, with StopGrace (15 s) to spare.
func TestStopReturnsWhenTheProcessExits(t *testing.T) {
	dir := t.TempDir()
	p := Start(context.Background(), termSpec(dir, "0.3"), func() {})
	waitTrapped(t, dir)
	pid, _, _ := p.State()
	start := time.Now()
	p.Stop()
	took := time.Since(start)
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("stop took %s; the process exits 300 ms after SIGTERM", took)
	}
	if Alive(pid, "") {
		t.Error("the process runs after stop")
	}
}

// One that ignores SIGTERM is killed when its grace ends.
func TestStopKillsAfterTheGrace(t *testing.T) {
	dir := t.TempDir()
	p := Start(context.Background(), termSpec(dir, ""), func() {})
	waitTrapped(t, dir)
	pid, _, _ := p.State()
	start := time.Now()
	p.StopWithin(500 * time.Millisecond)
	if took := time.Since(start); took < 500*time.Millisecond || took > 6*time.Second {
		t.Errorf("stop took %s with a grace of 500 ms", took)
	}
	if Alive(pid, "") {
		t.Error("the process that ignored SIGTERM runs after its grace")
	}
}

func TestFailureLine(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ log, want string }{
		"bind":  {"starting\nE1 listen tcp 127.0.0.1:1: bind: address already in use\nError: something else\nexit\n", "E1 listen tcp 127.0.0.1:1: bind: address already in use"},
		"error": {"starting\nW0 warning\nF1 fatal: no etcd\nshutting down\n", "F1 fatal: no etcd"},
		"last":  {"starting\nbye\n\n", "bye"},
		"none":  {"", ""},
		"long":  {strings.Repeat("x", 500) + " failed\n", strings.Repeat("x", 400)},
	} {
		file := filepath.Join(dir, name+".log")
		if err := os.WriteFile(file, []byte(tc.log), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := FailureLine(file); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
