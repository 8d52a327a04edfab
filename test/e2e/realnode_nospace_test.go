package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// TestRealNodeOutOfSpace: a real node whose state directory is a file system of its own that is
// too small cannot boot, says so in its LocalMachine's condition (reason NodeOutOfSpace, naming
// the directory) and leaves nothing on the host. Each machine's state directory is a tmpfs this
// test mounts (the host's disk is not filled): one of 1 MiB, which the provider sees before the
// node joins (no Node is registered); one with room for bytes but for 50 inodes only, which runs
// out midway, when the node's containerd unpacks the pause image.
func TestRealNodeOutOfSpace(t *testing.T) {
	realNodeRequirements(t)
	ctx := context.Background()
	env := lmTenant(t, "rn-nospace", "nospace")
	cases := []struct {
		machine, opts string
		want          string // in the condition's message
		registers     bool   // whether the node registered before it ran out
	}{
		{"rn-small", "size=1m", "no space left for a node", false},
		// Bytes beyond the provider's estimate (64 MiB and three times the node images, Flux's
		// too when built), inodes for the join and containerd's start but not an image's unpacking.
		{"rn-inodes", "size=2g,nr_inodes=50", "no space left on device", true},
	}
	var mounts []string
	for _, c := range cases {
		dir := filepath.Join(plane.dir, "machines", env.ns, c.machine)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, c.opts+",mode=0700"); err != nil {
			t.Fatalf("mounting a tmpfs (%s) at %s: %v", c.opts, dir, err)
		}
		mounts = append(mounts, dir)
		t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	}
	for i, c := range cases {
		start := time.Now()
		env.machine(t, c.machine, env.token, "real")
		var message string
		lmWait(t, 2*time.Minute, c.machine+"'s condition to say it is out of space", func() (bool, string) {
			u, err := env.dyn.Resource(external.LocalMachineGVR).Namespace(env.ns).Get(ctx, c.machine, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cond := range conds {
				cond := cond.(map[string]any)
				if cond["type"] == "Ready" && cond["status"] == "False" && cond["reason"] == "NodeOutOfSpace" {
					message = fmt.Sprint(cond["message"])
					return true, ""
				}
			}
			return false, fmt.Sprint(u.Object["status"])
		})
		t.Logf("%s (%s): NodeOutOfSpace in %s: %s", c.machine, c.opts, time.Since(start).Round(100*time.Millisecond), message)
		if !strings.Contains(message, c.want) || !strings.Contains(message, mounts[i]) {
			t.Errorf("%s: the condition says %q; want it to say %q and name the directory %s", c.machine, message, c.want, mounts[i])
		}
		_, err := env.tenant.CoreV1().Nodes().Get(ctx, c.machine, metav1.GetOptions{})
		if registered := err == nil; registered != c.registers {
			t.Errorf("%s: a Node registered: %v (%v), want %v", c.machine, registered, err, c.registers)
		}
		// A failed boot is tried again (0.5 s, doubled up to 30 s): what it leaves stays between
		// two tries, what a try makes while it runs does not.
		var left []string
		lmWait(t, 30*time.Second, "no leftovers of "+c.machine, func() (bool, string) {
			left = realNodeLeftoversBut(mounts...)
			return len(left) == 0, strings.Join(left, "\n  ")
		})
	}

	// Delete: once the LocalMachines are being deleted nothing boots them again; the test's
	// mounts go then (the provider removes a machine's directory, which a mount point keeps).
	for _, c := range cases {
		mustKubectl(t, "delete", "-n", env.ns, "machines.cluster.x-k8s.io", c.machine, "--wait=false")
	}
	for _, c := range cases {
		lmWait(t, time.Minute, c.machine+"'s LocalMachine to be deleting", func() (bool, string) {
			u, err := env.dyn.Resource(external.LocalMachineGVR).Namespace(env.ns).Get(ctx, c.machine, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, ""
			}
			if err != nil {
				return false, err.Error()
			}
			return u.GetDeletionTimestamp() != nil, "not yet"
		})
	}
	for _, dir := range mounts {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
	}
	for _, c := range cases {
		lmWait(t, time.Minute, c.machine+"'s LocalMachine to be gone", func() (bool, string) {
			_, err := env.dyn.Resource(external.LocalMachineGVR).Namespace(env.ns).Get(ctx, c.machine, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
	if left := realNodeLeftovers(); len(left) > 0 {
		t.Errorf("the deleted machines left:\n  %s", strings.Join(left, "\n  "))
	}
}

// realNodeLeftoversBut is realNodeLeftovers but for the mounts at the given mount points.
func realNodeLeftoversBut(mountPoints ...string) []string {
	var left []string
	for _, l := range realNodeLeftovers() {
		ours := false
		for _, mp := range mountPoints {
			if f := strings.Fields(l); len(f) > 2 && f[0] == "mount" && f[2] == mp {
				ours = true
			}
		}
		if !ours {
			left = append(left, l)
		}
	}
	return left
}
