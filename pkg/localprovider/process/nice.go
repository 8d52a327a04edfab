package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Renice gives the process started in a session of its own (Setsid) the nice value nice. With
// the kernel's autogroup on, the scheduler first shares the CPU between sessions and a thread's
// own nice counts only within its session, so the session's autogroup is niced; each of the
// process's threads is niced too, for kernels without autogroup (threads it makes later inherit
// their creator's). A process whose threads are at nice 10 gets about a ninth of the CPU a
// process at 0 gets when both want it, and all of it when nothing else runs.
func Renice(pid, nice int) error {
	var errs []error
	err := os.WriteFile(fmt.Sprintf("/proc/%d/autogroup", pid), []byte(strconv.Itoa(nice)), 0)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("autogroup: %w", err))
	}
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil {
		return err
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(filepath.Base(task))
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("thread %d: %w", tid, err))
		}
	}
	return errors.Join(errs...)
}
