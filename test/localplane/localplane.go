// Package localplane runs the local management plane (cmd/butler-localplane, pkg/localplane) for
// tests and finds what a plane left running after it stopped.
package localplane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Plane is a running butler-localplane.
type Plane struct {
	Root string // the repository
	Dir  string // LOCAL_DIR
	// Kubeconfig is the management cluster's admin kubeconfig.
	Kubeconfig string
	// Ports are the ports the plane chose (LOCAL_DIR/plane.env).
	Ports map[string]int

	cmd *exec.Cmd
	out *buffer
	// outFile, when set, holds the output instead of out (see StartMake).
	outFile string
	done    chan struct{} // closed when the plane's command has exited, err then its exit error
	err     error
}

// Start runs the plane's command (built first: a stale one would test old code) with
// LOCAL_DIR=dir and the extra environment, and waits until it serves (it writes admin.kubeconfig
// then) or exits. A plane that exits first is an error with its output.
func Start(root, dir string, timeout time.Duration, env ...string) (*Plane, error) {
	command, err := Command(root)
	if err != nil {
		return &Plane{out: &buffer{}}, err
	}
	return StartScript(command, root, dir, timeout, env...)
}

// Command builds cmd/butler-localplane into root/_output/bin (seconds when cached, built as the
// Makefile builds it so that the build cache serves it) and returns its path.
func Command(root string) (string, error) {
	bin := filepath.Join(root, "_output", "bin", "butler-localplane")
	build := exec.Command("go", "build", "-o", bin, "./cmd/butler-localplane")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-trimpath")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/butler-localplane: %v\n%s", err, out)
	}
	return bin, nil
}

// StartScript is Start with another plane executable (the command Command built, or a baseline:
// an earlier revision's hack/local-up.sh, placed in root/hack so that it finds the same
// binaries), run from root.
func StartScript(script, root, dir string, timeout time.Duration, env ...string) (*Plane, error) {
	cmd := exec.Command(script)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), "LOCAL_DIR="+dir), env...)
	return start(cmd, root, dir, timeout)
}

// StartMake runs the plane as a user does, `make run LOCAL_DIR=dir`, with the binaries make has
// already built (-o build: the target running the tests built them), under timeout(1) when
// underTimeout (as CI runs a command: timeout puts itself and make in a process group of their
// own and, when it is signalled, passes the signal to make and then to that group). Stop then
// signals timeout, else make alone (as a supervisor that knows only its child's pid does).
func StartMake(root, dir string, timeout time.Duration, underTimeout bool) (*Plane, error) {
	if _, err := Command(root); err != nil {
		return &Plane{out: &buffer{}}, err
	}
	args := []string{"make", "-C", root, "-o", "build", "run", "LOCAL_DIR=" + dir}
	if underTimeout {
		args = append([]string{"timeout", "1h"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	// As from a user's shell: not as a sub-make of the make running the tests.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Output to a file, not a pipe: Wait then returns when make has exited, not when the last
	// holder of a pipe (the plane's command, if make left it running) has.
	outFile := filepath.Join(dir, "make-run.out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(outFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	p, err := start(cmd, root, dir, timeout)
	if p != nil {
		p.outFile = outFile
	}
	return p, err
}

// Group is the process group Stop signals through (timeout's or make's, see StartMake).
func (p *Plane) Group() int { return p.cmd.Process.Pid }

func start(cmd *exec.Cmd, root, dir string, timeout time.Duration) (*Plane, error) {
	p := &Plane{Root: root, Dir: dir, Kubeconfig: filepath.Join(dir, "admin.kubeconfig"), out: &buffer{}, done: make(chan struct{}), cmd: cmd}
	if p.cmd.Stdout == nil {
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(p.Kubeconfig); err == nil {
			break
		}
		select {
		case <-p.done:
			return p, fmt.Errorf("the plane's command exited before the plane was up (%v)", p.err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return p, errors.Join(fmt.Errorf("the plane was not up after %s", timeout), p.Stop())
		}
	}
	p.Ports = map[string]int{}
	env2, _ := os.ReadFile(filepath.Join(dir, "plane.env")) // none from a baseline script
	for _, line := range strings.Split(string(env2), "\n") {
		if name, value, ok := strings.Cut(line, "="); ok {
			p.Ports[name], _ = strconv.Atoi(value)
		}
	}
	return p, nil
}

// Output is what the plane's command printed so far.
func (p *Plane) Output() string {
	if p.outFile != "" {
		out, _ := os.ReadFile(p.outFile)
		return string(out)
	}
	return p.out.String()
}

// Stop sends SIGTERM to the plane's command, which stops the processes in order, and waits for
// it; after 90 s it is killed. It returns the command's exit error: nil for a stop on SIGTERM,
// the error of a plane that had exited by itself.
func (p *Plane) Stop() error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		// The command stops everything, then exits with 128+SIGTERM (make and timeout, which
		// pass that on, may instead end by SIGTERM themselves).
		var exit *exec.ExitError
		if errors.As(p.err, &exit) {
			ws, _ := exit.Sys().(syscall.WaitStatus)
			if exit.ExitCode() == 128+int(syscall.SIGTERM) || ws.Signaled() && ws.Signal() == syscall.SIGTERM {
				return nil
			}
		}
		return p.err
	case <-time.After(90 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return errors.New("the plane's command did not stop within 90s; killed")
	}
}

// Process is a running process.
type Process struct {
	PID     int
	Cmdline string
}

func (p Process) String() string { return fmt.Sprintf("pid %d: %.160s", p.PID, p.Cmdline) }

// Leftovers are the running processes of the plane in dir: a binary under root's _output whose
// command line names dir (the plane's processes and its tenants').
func Leftovers(root, dir string) []Process {
	out := filepath.Join(root, "_output") + "/"
	dir = filepath.Clean(dir) + "/"
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var left []Process
	for _, f := range procs {
		data, err := os.ReadFile(f)
		if err != nil || len(data) == 0 {
			continue
		}
		cmd := strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
		if !strings.HasPrefix(cmd, out) || !strings.Contains(cmd, dir) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if isZombie(pid) {
			continue
		}
		left = append(left, Process{PID: pid, Cmdline: cmd})
	}
	return left
}

func isZombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// InGroup are the running processes of process group pgid.
func InGroup(pgid int) []Process {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var in []Process
	for _, f := range stats {
		stat, err := os.ReadFile(f)
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 {
			continue
		}
		// After the command's name: state, ppid, pgrp.
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline"))
		in = append(in, Process{PID: pid, Cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))})
	}
	return in
}

// Kill kills the processes with SIGKILL.
func Kill(procs []Process) {
	for _, p := range procs {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
}

// buffer is a bytes.Buffer safe for the writer (the process) and a reader at once.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
