package onenodecluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

// stopGrace is how long a process has between SIGTERM and SIGKILL when the cluster stops.
const stopGrace = 30 * time.Second

// child is a process the cluster started; done closes once it has exited and been reaped.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// procs are the cluster's processes, by name.
type procs struct {
	logs     string // the directory of their logs
	log      func(format string, args ...any)
	children map[string]*child
	order    []string
}

// start runs c in a session of its own, so that a Ctrl-C reaches only the cluster's command,
// which then stops the processes in order; its output goes to logs/<name>.log.
func (ps *procs) start(c component) error {
	logFile, err := os.Create(ps.logFile(c.name))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(c.args[0], c.args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", c.name, err)
	}
	ch := &child{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(ch.done) }()
	ps.children[c.name] = ch
	ps.order = append(ps.order, c.name)
	return nil
}

func (ps *procs) logFile(name string) string { return ps.logs + "/" + name + ".log" }

// exited is the first process that no longer runs, or "".
func (ps *procs) exited() string {
	for _, name := range ps.order {
		select {
		case <-ps.children[name].done:
			return name
		default:
		}
	}
	return ""
}

// waitFor polls cond until it holds. It fails naming a process that exits meanwhile (with its
// log's failing line), or after timeout.
func (ps *procs) waitFor(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) bool) error {
	deadline := time.Now().Add(timeout)
	for !cond(ctx) {
		if name := ps.exited(); name != "" {
			return fmt.Errorf("%s exited while waiting for %s: %s (log: %s)", name, what, process.FailureLine(ps.logFile(name)), ps.logFile(name))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s; logs in %s", timeout, what, ps.logs)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// stop stops name if it was started: SIGTERM, then SIGKILL after stopGrace.
func (ps *procs) stop(name string) {
	ch := ps.children[name]
	if ch == nil {
		return
	}
	_ = ch.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch.done:
	case <-time.After(stopGrace):
		ps.log("%s did not stop in %s; killing it", name, stopGrace)
		_ = ch.cmd.Process.Kill()
		<-ch.done
	}
	delete(ps.children, name)
}
