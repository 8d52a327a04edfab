package starts

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/test/localplane"
)

// `make run` stopped by SIGTERM, as timeout(1) stops it (make, then make's process group) and
// as a supervisor that signals only its child's pid stops it: by the time make has exited,
// every process of the plane is stopped and nothing of make's process group runs on. The
// plane's processes run in sessions of their own, so only the plane command's stop reaches them.
func TestMakeRunStopsOnSIGTERM(t *testing.T) {
	for _, tc := range []struct {
		name         string
		underTimeout bool
	}{
		{"timeout", true},
		{"make-pid-only", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, dir := root(t), t.TempDir()
			started := time.Now()
			p, err := localplane.StartMake(r, dir, 10*time.Minute, tc.underTimeout)
			if err != nil {
				t.Fatalf("make run: %v\n%s", err, p.Output())
			}
			up := time.Since(started)
			group := p.Group()
			stopping := time.Now()
			err = p.Stop()
			stopped := time.Since(stopping)
			// Read at once: what still runs when make has returned is what a supervisor leaves.
			left, inGroup := localplane.Leftovers(r, dir), localplane.InGroup(group)
			t.Logf("up in %s, stopped in %s", up.Round(100*time.Millisecond), stopped.Round(100*time.Millisecond))
			if err != nil {
				t.Errorf("stop: %v", err)
			}
			if len(left) > 0 {
				t.Errorf("when make had exited, %d processes of the plane ran: %v", len(left), left)
			}
			if len(inGroup) > 0 {
				t.Errorf("when make had exited, %d processes of its group ran: %v", len(inGroup), inGroup)
			}
			if !strings.Contains(p.Output(), "localplane: stopped") {
				t.Errorf("the plane did not say it stopped:\n%s", grep(p.Output(), "localplane"))
			}
			cleanUp(r, dir, inGroup)
		})
	}
}

// cleanUp stops what a failed stop left: the plane's command first (it stops its plane), then
// whatever of the plane still runs a minute later (at once when nothing of the group is left to
// stop it).
func cleanUp(r, dir string, inGroup []localplane.Process) {
	for _, pr := range inGroup {
		_ = syscall.Kill(pr.PID, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(time.Minute); len(inGroup) > 0 && time.Now().Before(deadline); time.Sleep(time.Second) {
		if len(localplane.Leftovers(r, dir)) == 0 {
			return
		}
	}
	localplane.Kill(localplane.Leftovers(r, dir))
}
