package machines

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Space a node needs before it boots: its containerd unpacks the node images under the machine's
// state directory (their archives about three times over, with their content kept), and its
// kubelet keeps its state and pods' emptyDir volumes under the run directory.
const (
	nodeStateSpace = 64 << 20
	nodeRunSpace   = 16 << 20
)

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
			return fmt.Errorf("no space left for a node: %d MiB free for %s (%s), a node needs %d MiB there",
				free>>20, need.what, need.dir, (need.bytes+1<<20-1)>>20)
		}
	}
	return nil
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
