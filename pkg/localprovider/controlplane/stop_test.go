package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

// stoppingSpec is a tenant component that takes 200 ms over its SIGTERM and writes to dir's
// "events" file when it gets the signal and when it exits; extra args make another command line.
// Once its trap is set it makes the file readyFile names.
func stoppingSpec(dir, component string, extra ...string) process.Spec {
	script := `trap 'echo "$0 term" >> "$1/events"; sleep 0.2; echo "$0 exit" >> "$1/events"; exit 0' TERM; ` +
		`touch "$1/ready-$0-$2"; while :; do sleep 0.05; done`
	return process.Spec{Component: component, Binary: "/bin/sh", Args: append([]string{"-c", script, component, dir}, extra...),
		LogFile: filepath.Join(dir, component+".log"), PidFile: filepath.Join(dir, component+".pid"), Owner: dir}
}

// runningPlane is a plane running the three components as stoppingSpec, kube-apiserver taken
// for serving (the controllers start once it does).
func runningPlane(t *testing.T, dir string, extra ...string) (*plane, []process.Spec) {
	specs := []process.Spec{stoppingSpec(dir, componentAPIServer, extra...), stoppingSpec(dir, componentControllerManager, extra...),
		stoppingSpec(dir, componentScheduler, extra...)}
	return runningPlaneOf(t, dir, specs), specs
}

// runningPlaneOf is runningPlane of specs (kube-apiserver's first).
func runningPlaneOf(t *testing.T, dir string, specs []process.Spec) *plane {
	pl := &plane{rec: tenantRecord{UID: "uid", Port: 1}, paths: tenantPaths{dir: dir}, notify: func() {}}
	pl.ensure(context.Background(), "v1.36.3", nil, specs[:1])
	pl.mu.Lock()
	pl.probe() // nothing serves at port 1: its answer is set by hand
	pl.probe = func() {}
	pl.mu.Unlock()
	time.Sleep(100 * time.Millisecond) // a probe under way sets its answer first
	pl.mu.Lock()
	pl.setReadyLocked(true)
	pl.mu.Unlock()
	pl.ensure(context.Background(), "v1.36.3", nil, specs)
	waitRunning(t, pl, specs)
	return pl
}

// readyFile is the file a stoppingSpec process makes once its trap is set.
func readyFile(s process.Spec) string {
	extra := ""
	if len(s.Args) > 4 {
		extra = s.Args[4]
	}
	return filepath.Join(s.Args[3], "ready-"+s.Component+"-"+extra)
}

// waitRunning waits until each of specs runs with its trap set.
func waitRunning(t *testing.T, pl *plane, specs []process.Spec) {
	t.Helper()
	waitFor(t, "every process to run", func() bool {
		pl.mu.Lock()
		defer pl.mu.Unlock()
		for _, s := range specs {
			p := pl.procs[s.Component]
			if p == nil || p.Spec().Hash() != s.Hash() {
				return false
			}
			if _, running, _ := p.State(); !running {
				return false
			}
			if _, err := os.Stat(readyFile(s)); err != nil {
				return false
			}
		}
		return true
	})
}

// events are the lines the stopping processes wrote, and it empties the file.
func events(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "events"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "events")); err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(data), " ", "-"))
}

// checkStopOrder says whether kube-apiserver got its SIGTERM only after both controllers exited
// (it has no client of theirs left to drain), and whether all three stopped.
func checkStopOrder(t *testing.T, got []string) {
	t.Helper()
	apiTerm := slices.Index(got, componentAPIServer+"-term")
	for _, c := range []string{componentControllerManager, componentScheduler} {
		if exit := slices.Index(got, c+"-exit"); exit < 0 || apiTerm < 0 || exit > apiTerm {
			t.Errorf("%s exited after kube-apiserver's SIGTERM (or not at all): %v", c, got)
		}
	}
	if !slices.Contains(got, componentAPIServer+"-exit") {
		t.Errorf("kube-apiserver did not exit: %v", got)
	}
}

// A plane's stop signals the controllers together, then kube-apiserver once they are gone, and
// returns when the processes have exited: 200 ms each over their SIGTERM, not a fixed grace.
func TestStopEndsWhenTheProcessesExit(t *testing.T) {
	dir := t.TempDir()
	pl, _ := runningPlane(t, dir)
	start := time.Now()
	pl.stop()
	took := time.Since(start)
	checkStopOrder(t, events(t, dir))
	// The controllers together (200 ms), then kube-apiserver (200 ms): about 400 ms, and on a
	// loaded machine still far below the 15 s grace.
	if took < 400*time.Millisecond || took > 5*time.Second {
		t.Errorf("stop took %s, want about 400 ms", took)
	}
}

// A rotation or an upgrade replaces all three processes: they stop as a plane stops (the
// controllers first, then kube-apiserver) before any starts again. One by one in their specs'
// order, kube-apiserver went first, with the controllers' watches still open.
func TestReplacedProcessesStopInStopOrder(t *testing.T) {
	dir := t.TempDir()
	pl, _ := runningPlane(t, dir)
	defer pl.stop()
	specs := []process.Spec{stoppingSpec(dir, componentAPIServer, "rotated"), stoppingSpec(dir, componentControllerManager, "rotated"),
		stoppingSpec(dir, componentScheduler, "rotated")}
	pl.ensure(context.Background(), "v1.36.3", nil, specs)
	checkStopOrder(t, events(t, dir))
	// Replaced, the controllers start again at once, as before.
	waitRunning(t, pl, specs)
}

// When the provider stops, every tenant's processes are gone within shutdownGrace a step (the
// controllers, then kube-apiserver), even those that ignore SIGTERM: well within the 30 s the
// plane that runs the provider gives it. With the 15 s grace of a single stop, CPU-starved
// tenants outlived a provider killed after its 30 s (issue 40's run of 80 tenants).
func TestStopAllKillsWithinTheShutdownGrace(t *testing.T) {
	dir := t.TempDir()
	var specs []process.Spec
	for _, c := range []string{componentAPIServer, componentControllerManager, componentScheduler} {
		s := stoppingSpec(dir, c)
		s.Args[1] = `trap '' TERM; touch "$1/ready-$0-$2"; while :; do sleep 0.05; done`
		specs = append(specs, s)
	}
	pl := runningPlaneOf(t, dir, specs)
	c := &Controller{planes: map[string]*plane{"uid": pl}}
	start := time.Now()
	c.stopAll(klog.Background())
	took := time.Since(start)
	if took < 2*shutdownGrace || took > 2*shutdownGrace+5*time.Second {
		t.Errorf("stopAll took %s, want about 2 x %s (both steps killed)", took, shutdownGrace)
	}
	for _, s := range specs {
		if rec, ok := process.ReadPidRecord(s.PidFile); ok && process.Alive(rec.PID, dir) {
			t.Errorf("%s (pid %d) outlived stopAll", s.Component, rec.PID)
		}
	}
}
