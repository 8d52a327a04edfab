package localplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

// component is one process of the plane.
type component struct {
	name  string   // its log (logs/<name>.log) and pid file (run/<name>.pid)
	ports []string // the port variables it binds
	// args is its command line, made when it is launched: from the ports as they are then.
	args func() []string
}

// procs are the plane's processes, with a pid file each.
type procs struct {
	process.Group
	o     Options
	log   func(format string, args ...any)
	ports *ports
}

// stopGrace is how long a process has between SIGTERM and SIGKILL when the plane stops.
const stopGrace = 30 * time.Second

// launch starts c; its pid goes to its pid file, where a process restarted by hand (or by a
// test) records its new pid.
func (ps *procs) launch(c component) error {
	pid, err := ps.Start(c.name, c.args())
	if err != nil {
		return err
	}
	return os.WriteFile(ps.pidFile(c.name), []byte(strconv.Itoa(pid)+"\n"), 0o644)
}

func (ps *procs) pidFile(name string) string { return filepath.Join(ps.o.runDir(), name+".pid") }

// pid is name's pid as its pid file has it (a process restarted by hand wrote its own there).
func (ps *procs) pid(name string) int {
	if data, err := os.ReadFile(ps.pidFile(name)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			return pid
		}
	}
	return ps.Pid(name)
}

func (ps *procs) alive(name string) bool { return process.Alive(ps.pid(name), "") }

// settle waits until c listens on each of its ports. One that exited because a port was taken
// gets new ports (those the environment did not fix) and is launched again, up to 5 times; any
// other exit is an error naming c and its log's failing line.
func (ps *procs) settle(ctx context.Context, c component) error {
	deadline := time.Now().Add(120 * time.Second)
	for attempt := 1; ; {
		if ps.listensOnAll(c) {
			return nil
		}
		if !ps.Running(c.name) {
			if !process.LastRunFailedToBind(ps.LogFile(c.name)) || attempt >= 5 {
				return fmt.Errorf("%s failed to start: %s (log: %s)", kind(c.name), process.FailureLine(ps.LogFile(c.name)), ps.LogFile(c.name))
			}
			if err := ps.relaunch(c, attempt); err != nil {
				return err
			}
			attempt++
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not listen on its ports in 120s; log: %s", c.name, ps.LogFile(c.name))
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

func (ps *procs) listensOnAll(c component) bool {
	for _, v := range c.ports {
		if !ownsPort(ps.Pid(c.name), ps.ports.get(v)) {
			return false
		}
	}
	return true
}

// relaunch starts c again on new ports after a port was taken, keeping the failed run's log.
func (ps *procs) relaunch(c component, attempt int) error {
	why := process.FailureLine(ps.LogFile(c.name))
	changed, err := ps.ports.pick(c.ports)
	if err != nil {
		return err
	}
	if !changed {
		return fmt.Errorf("%s failed to start: %s (its port was given in the environment; log: %s)", kind(c.name), why, ps.LogFile(c.name))
	}
	var now []string
	for _, v := range c.ports {
		now = append(now, strconv.Itoa(ps.ports.get(v)))
	}
	ps.log("%s: a port was taken (%s); starting it again on %s", c.name, why, strings.Join(now, " "))
	if err := os.Rename(ps.LogFile(c.name), fmt.Sprintf("%s.%d", ps.LogFile(c.name), attempt)); err != nil {
		return err
	}
	return ps.launch(c)
}

// replica matches the suffix of a butler-apiserver replica's name beyond the first.
var replica = regexp.MustCompile(`-[0-9]+$`)

// kind is a process's name without a replica's suffix.
func kind(name string) string { return replica.ReplaceAllString(name, "") }

// stop stops name, if this plane launched it (a pid file left by an earlier run may name
// another process by now): SIGTERM, then SIGKILL after stopGrace. One restarted by hand is
// stopped by the pid its pid file has.
func (ps *procs) stop(name string) {
	own := ps.Pid(name)
	if own == 0 {
		return
	}
	if pid := ps.pid(name); pid != own && process.Alive(pid, "") {
		process.Terminate(pid, stopGrace)
	}
	ps.Stop(name, stopGrace)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
