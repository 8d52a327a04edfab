package process

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A process with Nice runs niced, and so does its session's autogroup where the kernel has one:
// a tenant's processes yield to the management plane's when the CPU is short.
func TestNiceReachesTheProcessAndItsSession(t *testing.T) {
	dir := t.TempDir()
	spec := sleepSpec(dir)
	spec.Nice = 7
	p := Start(context.Background(), spec, func() {})
	defer p.Stop()
	waitFor(t, "the process to start", func() bool { _, running, _ := p.State(); return running })
	pid, _, _ := p.State()
	// The raw getpriority system call answers 20 - nice.
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, pid)
	if err != nil {
		t.Fatal(err)
	}
	if nice := 20 - prio; nice != 7 {
		t.Errorf("the process runs at nice %d, want 7", nice)
	}
	if data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/autogroup"); err == nil && !strings.HasSuffix(strings.TrimSpace(string(data)), "nice 7") {
		t.Errorf("its session's autogroup is %q, want nice 7", strings.TrimSpace(string(data)))
	}
	without := spec
	without.Nice = 0
	if spec.Hash() != without.Hash() {
		t.Error("Nice changes the hash: a running process would be replaced for it")
	}
}
