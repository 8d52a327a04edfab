package localplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
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

// child is a process this plane started; done closes when it has exited and been reaped.
type child struct {
	pid  int
	done chan struct{}
}

// procs are the plane's processes, in the order they were launched.
type procs struct {
	o        Options
	log      func(format string, args ...any)
	ports    *ports
	children map[string]*child
	order    []string
}

// stopGrace is how long a process has between SIGTERM and SIGKILL when the plane stops.
const stopGrace = 30 * time.Second

// launch starts c in a session of its own, so that a Ctrl-C or a SIGTERM sent to the plane's
// process group reaches only the plane, which then stops the processes in order. Its output
// goes to its log; its pid to its pid file, where a process restarted by hand (or by a test)
// records its new pid.
func (ps *procs) launch(c component) error {
	logFile, err := os.Create(filepath.Join(ps.o.logsDir(), c.name+".log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := c.args()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", c.name, err)
	}
	ch := &child{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(ch.done) }()
	if _, known := ps.children[c.name]; !known {
		ps.order = append(ps.order, c.name)
	}
	ps.children[c.name] = ch
	return os.WriteFile(ps.pidFile(c.name), []byte(strconv.Itoa(ch.pid)+"\n"), 0o644)
}

func (ps *procs) pidFile(name string) string { return filepath.Join(ps.o.runDir(), name+".pid") }
func (ps *procs) logFile(name string) string { return filepath.Join(ps.o.logsDir(), name+".log") }

// pid is name's pid as its pid file has it (a process restarted by hand wrote its own there).
func (ps *procs) pid(name string) int {
	if data, err := os.ReadFile(ps.pidFile(name)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			return pid
		}
	}
	if ch := ps.children[name]; ch != nil {
		return ch.pid
	}
	return 0
}

func (ps *procs) alive(name string) bool { return process.Alive(ps.pid(name), "") }

// exited is the error of a process gone while the plane waited on something.
func (ps *procs) exited(name, while string) error {
	return fmt.Errorf("%s exited%s: %s (log: %s)", name, while, process.FailureLine(ps.logFile(name)), ps.logFile(name))
}

// anyExited is the first launched process that no longer runs, as an error.
func (ps *procs) anyExited(while string) error {
	for _, name := range ps.order {
		if !ps.alive(name) {
			return ps.exited(name, while)
		}
	}
	return nil
}

// settle waits until c listens on each of its ports. One that exited because a port was taken
// gets new ports (those the environment did not fix) and is launched again, up to 5 times; any
// other exit is an error naming c and its log's failing line.
func (ps *procs) settle(ctx context.Context, c component) error {
	deadline := time.Now().Add(120 * time.Second)
	for attempt := 1; ; {
		if ps.listensOnAll(c) {
			return nil
		}
		if !process.Alive(ps.children[c.name].pid, "") {
			if !process.LastRunFailedToBind(ps.logFile(c.name)) || attempt >= 5 {
				return fmt.Errorf("%s failed to start: %s (log: %s)", kind(c.name), process.FailureLine(ps.logFile(c.name)), ps.logFile(c.name))
			}
			if err := ps.relaunch(c, attempt); err != nil {
				return err
			}
			attempt++
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not listen on its ports in 120s; log: %s", c.name, ps.logFile(c.name))
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

func (ps *procs) listensOnAll(c component) bool {
	for _, v := range c.ports {
		if !ownsPort(ps.children[c.name].pid, ps.ports.get(v)) {
			return false
		}
	}
	return true
}

// relaunch starts c again on new ports after a port was taken, keeping the failed run's log.
func (ps *procs) relaunch(c component, attempt int) error {
	why := process.FailureLine(ps.logFile(c.name))
	changed, err := ps.ports.pick(c.ports)
	if err != nil {
		return err
	}
	if !changed {
		return fmt.Errorf("%s failed to start: %s (its port was given in the environment; log: %s)", kind(c.name), why, ps.logFile(c.name))
	}
	var now []string
	for _, v := range c.ports {
		now = append(now, strconv.Itoa(ps.ports.get(v)))
	}
	ps.log("%s: a port was taken (%s); starting it again on %s", c.name, why, strings.Join(now, " "))
	if err := os.Rename(ps.logFile(c.name), fmt.Sprintf("%s.%d", ps.logFile(c.name), attempt)); err != nil {
		return err
	}
	return ps.launch(c)
}

// replica matches the suffix of a butler-apiserver replica's name beyond the first.
var replica = regexp.MustCompile(`-[0-9]+$`)

// kind is a process's name without a replica's suffix.
func kind(name string) string { return replica.ReplaceAllString(name, "") }

// stop stops name, if this plane launched it (a pid file left by an earlier run may name
// another process by now): SIGTERM, then SIGKILL after stopGrace.
func (ps *procs) stop(name string) {
	if ps.children[name] == nil {
		return
	}
	pid := ps.pid(name)
	if process.Alive(pid, "") {
		process.Terminate(pid, stopGrace)
	}
	if ch := ps.children[name]; ch != nil && ch.pid == pid {
		<-ch.done
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
