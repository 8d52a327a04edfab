package process

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Group is a command's own processes (the local plane's, the one-node cluster's), unlike the
// supervised ones above: each runs once, in a session of its own, so that a Ctrl-C or a SIGTERM
// sent to the command's process group reaches only the command, which then stops them in its
// order. Each one's output goes to LogDir/<name>.log. A Group is used from one goroutine.
type Group struct {
	LogDir   string
	children map[string]*child
	order    []string
}

// child is a started process; done closes once it has exited and been reaped.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs args as name, its log truncated. A name started again (after it exited) keeps its
// place in Names.
func (g *Group) Start(name string, args []string) (pid int, err error) {
	logFile, err := os.Create(g.LogFile(name))
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s: %w", name, err)
	}
	ch := &child{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(ch.done) }()
	if g.children == nil {
		g.children = map[string]*child{}
	}
	if _, known := g.children[name]; !known {
		g.order = append(g.order, name)
	}
	g.children[name] = ch
	return cmd.Process.Pid, nil
}

// LogFile is name's log.
func (g *Group) LogFile(name string) string { return filepath.Join(g.LogDir, name+".log") }

// Names are the started processes, in the order they were first started.
func (g *Group) Names() []string { return g.order }

// Pid is the pid name was last started with; 0 when it never was.
func (g *Group) Pid(name string) int {
	if ch := g.children[name]; ch != nil {
		return ch.cmd.Process.Pid
	}
	return 0
}

// Running says whether name was started and has not exited.
func (g *Group) Running(name string) bool {
	ch := g.children[name]
	if ch == nil {
		return false
	}
	select {
	case <-ch.done:
		return false
	default:
		return true
	}
}

// Exited is the first started process that has exited, or "".
func (g *Group) Exited() string {
	for _, name := range g.order {
		if !g.Running(name) {
			return name
		}
	}
	return ""
}

// ExitedError is name's exit as an error, with its log's failing line.
func (g *Group) ExitedError(name, while string) error {
	return fmt.Errorf("%s exited%s: %s (log: %s)", name, while, FailureLine(g.LogFile(name)), g.LogFile(name))
}

// WaitFor polls ok (each call bounded to 5 s) every 200 ms until it holds. It fails naming a
// process that exits meanwhile, or after timeout.
func (g *Group) WaitFor(ctx context.Context, what string, timeout time.Duration, ok func(context.Context) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		done := ok(checkCtx)
		cancel()
		if done {
			return nil
		}
		if name := g.Exited(); name != "" {
			return g.ExitedError(name, " while waiting for "+what)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s; logs in %s", timeout, what, g.LogDir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop sends name SIGTERM and waits for it to exit, killing it after grace; killed says the
// kill was needed. A name never started, or gone already, returns at once.
func (g *Group) Stop(name string, grace time.Duration) (killed bool) {
	ch := g.children[name]
	if ch == nil {
		return false
	}
	_ = ch.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch.done:
		return false
	case <-time.After(grace):
		_ = ch.cmd.Process.Kill()
		<-ch.done
		return true
	}
}
