// Package localplane runs the local management plane (hack/local-up.sh) for tests and finds what
// a plane left running after it stopped.
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

// Plane is a running hack/local-up.sh.
type Plane struct {
	Root string // the repository
	Dir  string // LOCAL_DIR
	// Kubeconfig is the management cluster's admin kubeconfig.
	Kubeconfig string
	// Ports are the ports the plane chose (LOCAL_DIR/plane.env).
	Ports map[string]int

	cmd  *exec.Cmd
	out  *buffer
	done chan struct{} // closed when local-up.sh has exited, err then its exit error
	err  error
}

// Start runs hack/local-up.sh with LOCAL_DIR=dir and the extra environment, and waits until it
// serves (it writes admin.kubeconfig then) or exits. A plane that exits first is an error with
// its output.
func Start(root, dir string, timeout time.Duration, env ...string) (*Plane, error) {
	return StartScript(filepath.Join(root, "hack", "local-up.sh"), root, dir, timeout, env...)
}

// StartScript is Start with another local-up script (a baseline: an earlier revision's, placed
// in root/hack so that it finds the same binaries).
func StartScript(script, root, dir string, timeout time.Duration, env ...string) (*Plane, error) {
	p := &Plane{Root: root, Dir: dir, Kubeconfig: filepath.Join(dir, "admin.kubeconfig"), out: &buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(script)
	p.cmd.Env = append(append(os.Environ(), "LOCAL_DIR="+dir), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
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
			return p, fmt.Errorf("local-up.sh exited before the plane was up (%v)", p.err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return p, fmt.Errorf("the plane was not up after %s", timeout)
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

// Output is what local-up.sh printed so far.
func (p *Plane) Output() string { return p.out.String() }

// Stop sends SIGTERM to local-up.sh, which stops the processes in order, and waits for it; after
// 90 s it is killed. It returns local-up's exit error: nil for a stop on SIGTERM, the error of
// a plane that had exited by itself.
func (p *Plane) Stop() error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		// local-up.sh stops everything, then exits with 128+SIGTERM.
		var exit *exec.ExitError
		if errors.As(p.err, &exit) && exit.ExitCode() == 128+int(syscall.SIGTERM) {
			return nil
		}
		return p.err
	case <-time.After(90 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return errors.New("local-up.sh did not stop within 90s; killed")
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
