package machines

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Space a node needs before it boots: its containerd unpacks the node images under the machine's
// state directory (their archives about three times over, with their content kept), and its
// kubelet keeps its state and pods' emptyDir volumes under the run directory.
const (
	nodeStateSpace = 64 << 20
	nodeRunSpace   = 16 << 20
)

// ErrNoSpace is a node that cannot boot for want of space: too little before it starts, or a
// write that failed midway with ENOSPC or EDQUOT (bytes or inodes).
var ErrNoSpace = errors.New("no space left for a node")

// checkSpace says which file system has too little space for a node, before it takes anything:
// a node that ran out midway would fail with a tool's message (containerd's import) instead.
func (r *RealNodes) checkSpace(machineDir, runDir string) error {
	var images uint64
	for _, archive := range r.opts.Images {
		if fi, err := os.Stat(archive); err == nil {
			images += uint64(fi.Size())
		}
	}
	for _, need := range []struct {
		dir, what string
		bytes     uint64
	}{{machineDir, "the machine's state directory", nodeStateSpace + 3*images}, {runDir, "the nodes' run directory", nodeRunSpace}} {
		free, err := r.freeSpace(existingParent(need.dir))
		if err != nil {
			return fmt.Errorf("the free space of %s (%s): %w", need.what, need.dir, err)
		}
		if free < need.bytes {
			return fmt.Errorf("%w: %d MiB free for %s (%s), a node needs %d MiB there",
				ErrNoSpace, free>>20, need.what, need.dir, (need.bytes+1<<20-1)>>20)
		}
	}
	return nil
}

// isNoSpace says whether err is a file system out of bytes or inodes: this process's own write
// (ENOSPC, EDQUOT), or a tool's or a node process's output saying so (ctr's, containerd's).
func isNoSpace(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrNoSpace) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, syscall.ENOSPC.Error()) || strings.Contains(msg, syscall.EDQUOT.Error())
}

// outOfSpace is err, a node's boot that ran out of space midway, with what is left where the
// node writes, measured before the failed boot's files are removed.
func outOfSpace(err error, dirs map[string]string) error {
	if errors.Is(err, ErrNoSpace) {
		return err
	}
	var left []string
	for _, what := range []string{"the machine's state directory", "the nodes' run directory"} {
		dir := existingParent(dirs[what])
		var st unix.Statfs_t
		if dirs[what] == "" || unix.Statfs(dir, &st) != nil {
			continue
		}
		left = append(left, fmt.Sprintf("%s (%s) has %d MiB and %d inodes free", what, dir, st.Bavail*uint64(st.Bsize)>>20, st.Ffree))
	}
	return fmt.Errorf("%w: %s: %w", ErrNoSpace, strings.Join(left, ", "), err)
}

// statfsFree is the space left for an unprivileged writer on path's file system.
func statfsFree(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// existingParent is dir or its nearest ancestor that exists (a machine's directory is made later).
func existingParent(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}
