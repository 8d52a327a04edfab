package localplane

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

// isLeftover says a command line is one of this plane's processes: a binary of BIN or
// KUBE_VERSIONS_DIR whose command line names LOCAL_DIR (the plane's processes and the tenants').
func (o Options) isLeftover(cmdline string) bool {
	return (strings.HasPrefix(cmdline, o.Bin+"/") || strings.HasPrefix(cmdline, o.KubeVersionsDir+"/")) &&
		strings.Contains(cmdline, o.Dir+"/")
}

// leftovers are the pids of this plane's processes other than this one.
func (o Options) leftovers() map[int]string {
	left := map[int]string{}
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		data, err := os.ReadFile(f)
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
		if o.isLeftover(cmdline) && process.Alive(pid, "") {
			left[pid] = cmdline
		}
	}
	return left
}

// sweep stops every leftover (SIGTERM, then SIGKILL after 15 s), saying which and why: a plane
// that died without stopping (killed, a machine that crashed) left them, or a parent that was
// killed did (a tenant process of a provider a test killed).
func (o Options) sweep(why string, log func(string, ...any)) {
	left := o.leftovers()
	for pid, cmdline := range left {
		log("%s: stopping %.120s... (pid %d)", why, cmdline, pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(15 * time.Second); len(left) > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		left = o.leftovers()
	}
	for pid := range left {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// lock takes LOCAL_DIR's lock: one plane per directory. It is held while this process runs
// (the processes it starts do not inherit it: Go opens files close-on-exec).
func (o Options) lock() (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(o.runDir(), "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another plane runs with LOCAL_DIR=%s; stop it first", o.Dir)
	}
	return f, nil
}
