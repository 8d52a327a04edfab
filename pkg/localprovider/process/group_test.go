package process

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sh is a command line running script in sh, with dir as its $0.
func sh(dir, script string) []string { return []string{"/bin/sh", "-c", script, dir} }

// A group's process logs to its file, and one that exits is named, with its log's failing line,
// by a wait that was going on.
func TestGroupNamesTheProcessThatExited(t *testing.T) {
	g := &Group{LogDir: t.TempDir()}
	if _, err := g.Start("stays", sh("", "exec sleep 30")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Start("fails", sh("", "echo 'Error: port 1 taken'; exit 3")); err != nil {
		t.Fatal(err)
	}
	defer g.Stop("stays", time.Second)
	err := g.WaitFor(context.Background(), "nothing", 10*time.Second, func(context.Context) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "fails exited while waiting for nothing: Error: port 1 taken") {
		t.Fatalf("want the exit of 'fails' with its log line, got %v", err)
	}
	if !g.Running("stays") || g.Running("fails") || g.Exited() != "fails" {
		t.Errorf("running: stays %v, fails %v; exited %q", g.Running("stays"), g.Running("fails"), g.Exited())
	}
	// Started again, it keeps its place: stop orders read Names.
	if _, err := g.Start("fails", sh("", "exec sleep 30")); err != nil {
		t.Fatal(err)
	}
	defer g.Stop("fails", time.Second)
	if got := strings.Join(g.Names(), " "); got != "stays fails" || g.Exited() != "" {
		t.Errorf("names %q, exited %q after the restart", got, g.Exited())
	}
}

// A stop returns when the process exits after SIGTERM; one that ignores it is killed once the
// grace ends; a name never started, or already stopped, returns at once.
func TestGroupStop(t *testing.T) {
	dir := t.TempDir()
	g := &Group{LogDir: dir}
	trapped := func(name, handler string) {
		t.Helper()
		ready := filepath.Join(dir, name+".ready")
		if _, err := g.Start(name, sh(ready, "trap "+handler+` TERM; touch "$0"; while :; do sleep 0.05; done`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, name+" to set its trap", func() bool { _, err := os.Stat(ready); return err == nil })
	}
	trapped("polite", "'exit 0'")
	trapped("deaf", "''")
	start := time.Now()
	if killed := g.Stop("polite", 10*time.Second); killed || time.Since(start) > 5*time.Second {
		t.Errorf("polite: killed %v after %s", killed, time.Since(start))
	}
	start = time.Now()
	if killed := g.Stop("deaf", 300*time.Millisecond); !killed || time.Since(start) < 300*time.Millisecond {
		t.Errorf("deaf: killed %v after %s", killed, time.Since(start))
	}
	if g.Running("polite") || g.Running("deaf") {
		t.Error("a stopped process runs")
	}
	start = time.Now()
	if g.Stop("deaf", 10*time.Second) || g.Stop("never", 10*time.Second) || time.Since(start) > time.Second {
		t.Errorf("stopping what is gone or never started took %s", time.Since(start))
	}
}
