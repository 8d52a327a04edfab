package localplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// KillForRestart SIGKILLs the plane's process name (its pid in dir/run/<name>.pid) and waits until it is
// gone. It returns the process's command line and what starts it again with the same command
// line, environment and log, recording the new pid where the plane stops it by (which
// waits RESTART_GRACE seconds for that). A caller may replace args[0] in between.
func KillForRestart(t testing.TB, dir, name string) (args []string, startAgain func()) {
	t.Helper()
	args, startWith := KillForRestartWith(t, dir, name)
	return args, func() { startWith(args) }
}

// KillForRestartWith is KillForRestart whose start again runs the command line it is given (the
// killed one's, changed: another flag, say).
func KillForRestartWith(t testing.TB, dir, name string) (args []string, startWith func(args []string)) {
	t.Helper()
	pidFile := filepath.Join(dir, "run", name+".pid")
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("%s: %v", pidFile, err)
	}
	proc := func(file string) []string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	args, env := proc("cmdline"), proc("environ")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for Alive(pid) {
		time.Sleep(10 * time.Millisecond)
	}
	return args, func(args []string) {
		t.Helper()
		log, err := os.OpenFile(filepath.Join(dir, "logs", name+".log"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("restarting %s: %v", name, err)
		}
		go func() { _ = cmd.Wait() }() // reaped when the plane stops it
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Alive says pid runs: it exists and is neither a zombie nor dead.
func Alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}
