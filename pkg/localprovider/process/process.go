// Package process supervises the local provider's processes (a tenant control plane's
// kube-apiserver, kube-controller-manager and kube-scheduler, and the datastore's etcd): each is
// restarted with backoff when it exits and stopped on request. They run in their own sessions and
// are recorded in pid files with a hash of their command line, so a provider that crashed adopts
// them when it starts again rather than starting a second set.
//
// It also has what the commands that run a plane on this machine (butler-localplane,
// butler-cluster) share: Group, their own processes started once and stopped in order, and
// Main, the signal handling and exit codes of such a command.
package process

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// Spec is one supervised process: a tenant control plane's component, or the datastore's etcd.
type Spec struct {
	Component string
	Binary    string
	Args      []string
	LogFile   string
	PidFile   string
	// Owner is a string the process's command line must contain to be taken for this tenant's
	// (its state directory): a recorded pid may since have been reused by another process.
	Owner string
	// Credentials is a digest of what the process reads once when it starts (certificates and
	// keys, not named by its command line): a process started with others is replaced.
	Credentials string
	// Env is added to the provider's environment ("NAME=value", later ones winning): the Go
	// runtime's settings of a tenant's processes (tenantEnv).
	Env []string
	// Nice lowers the process's share of the CPU when the machine is saturated (renice): a
	// tenant's processes yield to the management plane's. It is not part of the Hash: a
	// running process is not replaced for it.
	Nice int
}

// Hash identifies the command line and the environment added to it: a process running another
// one (another version, other flags, another GOGC) is replaced.
func (s Spec) Hash() string {
	h := sha256.New()
	h.Write([]byte(s.Binary))
	for _, a := range s.Args {
		h.Write([]byte{0})
		h.Write([]byte(a))
	}
	if s.Credentials != "" {
		h.Write([]byte{1})
		h.Write([]byte(s.Credentials))
	}
	for _, e := range s.Env {
		h.Write([]byte{2})
		h.Write([]byte(e))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// PidRecord is what a pid file holds.
type PidRecord struct {
	PID  int    `json:"pid"`
	Hash string `json:"hash"`
}

// Restart backoff: a process that exits is started again after 500ms, doubling to 30s; one that
// ran for a minute before it exited starts from 500ms again.
const (
	restartInitial = 500 * time.Millisecond
	restartMax     = 30 * time.Second
	stableAfter    = time.Minute
	StopGrace      = 15 * time.Second
)

// Process supervises one process: it starts it (or adopts a running one recorded in its pid
// file), starts it again when it exits, and stops it on request.
type Process struct {
	spec     Spec
	hash     string
	onChange func()
	logger   klog.Logger

	mu       sync.Mutex
	pid      int
	running  bool
	starts   int // how many times it was started or adopted
	stopping bool

	stopCh chan struct{}
	done   chan struct{}
}

// Start supervises spec until Stop is called. onChange is called (without locks held)
// whenever the process starts or exits.
func Start(ctx context.Context, spec Spec, onChange func()) *Process {
	p := &Process{
		spec: spec, hash: spec.Hash(), onChange: onChange,
		logger: klog.FromContext(ctx).WithValues("component", spec.Component),
		stopCh: make(chan struct{}), done: make(chan struct{}),
	}
	go p.supervise()
	return p
}

// State is the process's pid (0 when none), whether it runs, and how often it was started.
func (p *Process) State() (pid int, running bool, starts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid, p.running, p.starts
}

// Spec is what the process runs.
func (p *Process) Spec() Spec { return p.spec }

func (p *Process) supervise() {
	defer close(p.done)
	backoff := restartInitial
	for {
		started := time.Now()
		wait, err := p.adoptOrStart()
		if err != nil {
			p.logger.Error(err, "Starting failed", "binary", p.spec.Binary)
		} else {
			// A stop that came while this process was starting found nothing running to
			// terminate: terminate it here (a stop after setRunning terminates it itself).
			p.mu.Lock()
			stopping, pid := p.stopping, p.pid
			p.mu.Unlock()
			if stopping {
				Terminate(pid, StopGrace)
				_ = wait()
				return
			}
			p.onChange()
			exitErr := wait()
			p.mu.Lock()
			p.running = false
			stopping = p.stopping
			p.mu.Unlock()
			if stopping {
				return
			}
			p.logger.Info("Exited; starting it again", "err", exitErr, "after", backoff, "log", p.spec.LogFile)
			p.onChange()
		}
		if time.Since(started) > stableAfter {
			backoff = restartInitial
		}
		select {
		case <-p.stopCh:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, restartMax)
	}
}

// adoptOrStart adopts the recorded process if it still runs this spec, or starts a new one. It
// returns a function that blocks until the process exits (or stop is asked of an adopted one).
func (p *Process) adoptOrStart() (func() error, error) {
	if rec, ok := ReadPidRecord(p.spec.PidFile); ok && Alive(rec.PID, p.spec.Owner) {
		if rec.Hash == p.hash {
			p.logger.Info("Adopted the running process", "pid", rec.PID)
			p.setRunning(rec.PID)
			return func() error { return p.waitAdopted(rec.PID) }, nil
		}
		// A process of this tenant with another command line (another version): replace it.
		p.logger.Info("Stopping the running process: its command line changed", "pid", rec.PID)
		Terminate(rec.PID, StopGrace)
	}
	logFile, err := os.OpenFile(p.spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	// The line is the command as a shell would run it, its Go settings included (env NAME=value),
	// so a start can be repeated by hand (the P6 and P10 figures' baselines do).
	command := append([]string{p.spec.Binary}, p.spec.Args...)
	if len(p.spec.Env) > 0 {
		command = append(append([]string{"env"}, p.spec.Env...), command...)
	}
	fmt.Fprintf(logFile, "\n"+startMarker+"%s starting: %s\n", time.Now().Format(time.RFC3339), strings.Join(command, " "))
	cmd := exec.Command(p.spec.Binary, p.spec.Args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(p.spec.Env) > 0 {
		cmd.Env = append(os.Environ(), p.spec.Env...)
	}
	// Its own session: a signal to the provider's process group does not reach it, and it
	// outlives a provider that crashed (the next one adopts it).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if p.spec.Nice != 0 {
		if err := Renice(cmd.Process.Pid, p.spec.Nice); err != nil {
			p.logger.Error(err, "Lowering the process's CPU priority failed; it competes with the management plane", "pid", cmd.Process.Pid)
		}
	}
	if err := writePidRecord(p.spec.PidFile, PidRecord{PID: cmd.Process.Pid, Hash: p.hash}); err != nil {
		p.logger.Error(err, "Recording the pid failed; a restarted provider will not adopt this process", "pid", cmd.Process.Pid)
	}
	p.setRunning(cmd.Process.Pid)
	p.logger.V(2).Info("Started", "pid", cmd.Process.Pid)
	return cmd.Wait, nil
}

func (p *Process) setRunning(pid int) {
	p.mu.Lock()
	p.pid, p.running = pid, true
	p.starts++
	p.mu.Unlock()
}

// waitAdopted polls a process that is not this one's child until it is gone or stop is asked.
func (p *Process) waitAdopted(pid int) error {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stopCh:
			// stop terminates it; wait for that.
			for Alive(pid, p.spec.Owner) {
				time.Sleep(50 * time.Millisecond)
			}
			return nil
		case <-t.C:
			if !Alive(pid, p.spec.Owner) {
				return errors.New("the adopted process is gone")
			}
		}
	}
}

// Stop terminates the process (SIGTERM, then SIGKILL after StopGrace) and ends the supervision.
func (p *Process) Stop() { p.StopWithin(StopGrace) }

// StopWithin is Stop with SIGKILL after grace.
func (p *Process) StopWithin(grace time.Duration) {
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		<-p.done
		return
	}
	p.stopping = true
	pid, running := p.pid, p.running
	p.mu.Unlock()
	close(p.stopCh)
	if running && pid > 0 {
		Terminate(pid, grace)
	}
	<-p.done
	_ = os.Remove(p.spec.PidFile)
}

// Terminate sends SIGTERM to pid and SIGKILL if it has not exited within grace.
func Terminate(pid int, grace time.Duration) {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !Alive(pid, "") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	if grace > 0 {
		klog.InfoS("Killing a process that did not exit within its grace after SIGTERM", "pid", pid, "cmd", commandName(pid), "grace", grace)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100 && Alive(pid, ""); i++ {
		time.Sleep(50 * time.Millisecond)
	}
}

// Alive says whether pid runs and is not a zombie, and, when owner is given, whether its command
// line contains owner.
func Alive(pid int, owner string) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
		return false
	}
	if owner == "" {
		return true
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), owner)
}

// startMarker begins the lines a process start writes to its log.
const startMarker = "==== "

// LastRunFailedToBind says whether the log's last run (after its last start marker) says a
// listener could not bind because the address was taken. Only the log's tail is read.
func LastRunFailedToBind(logFile string) bool {
	f, err := os.Open(logFile)
	if err != nil {
		return false
	}
	defer f.Close()
	const tail = 16 << 10
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		_, _ = f.Seek(st.Size()-tail, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	if i := strings.LastIndex(string(data), "\n"+startMarker); i >= 0 {
		data = data[i:]
	}
	return strings.Contains(string(data), "address already in use")
}

// ReadPidRecord reads the pid file name; false when there is none.
func ReadPidRecord(name string) (PidRecord, bool) {
	var rec PidRecord
	data, err := os.ReadFile(name)
	if err != nil || json.Unmarshal(data, &rec) != nil || rec.PID <= 0 {
		return rec, false
	}
	return rec, true
}

func writePidRecord(name string, rec PidRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// commandName is pid's command name, for the log ("" once it is gone).
func commandName(pid int) string {
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(comm))
}

var (
	bindFailure = regexp.MustCompile(`address already in use`)
	anyFailure  = regexp.MustCompile(`(?i)error|fatal|panic|failed`)
)

// FailureLine is the line of a process's log that says why it failed: the last bind failure,
// else the last error, else the last line; at most 400 characters.
func FailureLine(logFile string) string {
	f, err := os.Open(logFile)
	if err != nil {
		return ""
	}
	defer f.Close()
	var bind, failed, last string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case bindFailure.MatchString(line):
			bind = line
		case anyFailure.MatchString(line):
			failed = line
		}
		if strings.TrimSpace(line) != "" {
			last = line
		}
	}
	line := cmp.Or(bind, failed, last)
	if len(line) > 400 {
		line = line[:400]
	}
	return line
}
