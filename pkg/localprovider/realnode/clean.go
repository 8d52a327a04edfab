package realnode

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

const cgroupFS = "/sys/fs/cgroup"

// CgroupHierarchies are the cgroup v1 hierarchies mounted under /sys/fs/cgroup (the kubelet
// wants its cgroup root in each), or the single v2 one.
func CgroupHierarchies() []string {
	var out []string
	if _, err := os.Stat(filepath.Join(cgroupFS, "cgroup.controllers")); err == nil {
		return []string{cgroupFS}
	}
	entries, _ := os.ReadDir(cgroupFS)
	for _, e := range entries {
		p := filepath.Join(cgroupFS, e.Name())
		var st unix.Statfs_t
		if e.IsDir() && e.Name() != "unified" && unix.Statfs(p, &st) == nil && st.Type == unix.CGROUP_SUPER_MAGIC {
			out = append(out, p)
		}
	}
	return out
}

// CreateCgroup makes a kubelet's cgroup root in every hierarchy (the kubelet refuses a root
// that does not exist), cpuset's with its parent's cpus and memory nodes.
func CreateCgroup(root string) error {
	for _, h := range CgroupHierarchies() {
		parts := strings.Split(strings.Trim(root, "/"), "/")
		dir := h
		for _, p := range parts {
			parent := dir
			dir = filepath.Join(dir, p)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			if filepath.Base(h) == "cpuset" {
				if err := inheritCpuset(parent, dir); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// inheritCpuset gives a new cpuset cgroup its parent's cpus and memory nodes: one with none
// admits no process.
func inheritCpuset(parent, dir string) error {
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		if cur, _ := os.ReadFile(filepath.Join(dir, f)); len(bytes.TrimSpace(cur)) > 0 {
			continue
		}
		v, err := os.ReadFile(filepath.Join(parent, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), v, 0); err != nil {
			return err
		}
	}
	return nil
}

// KillCgroup kills every process left in the cgroups under root (a node's containers) and
// waits, up to 5 s, until they are gone: a cgroup is removed only once empty, and a killed
// process stays in it until its exit is done.
func KillCgroup(root string) {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := 0
		for _, h := range CgroupHierarchies() {
			_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				data, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil {
						left++
						_ = unix.Kill(pid, unix.SIGKILL)
					}
				}
				return nil
			})
		}
		if left == 0 || time.Now().After(deadline) {
			return
		}
	}
}

// RemoveCgroup removes the cgroups under root, deepest first, in every hierarchy, and root's
// parent when it is empty.
func RemoveCgroup(root string) {
	// The kubelet also makes its cgroups in a hybrid host's v2 hierarchy (unified).
	hierarchies := CgroupHierarchies()
	if unified := filepath.Join(cgroupFS, "unified"); len(hierarchies) > 1 {
		hierarchies = append(hierarchies, unified)
	}
	for _, h := range hierarchies {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			_ = unix.Rmdir(d)
		}
		_ = unix.Rmdir(filepath.Join(h, filepath.Dir(root)))
	}
}

// KillProcesses kills the processes whose command line (its arguments joined by NULs, one
// ending it) contains one of marks, and waits, up to 5 s, until they are gone. A plane that was
// killed left its node's processes (kubelet, containerd, kube-proxy, containerd's shims, which
// outlive containerd); they would hold its keys, ports and directories while a new boot used them.
func KillProcesses(marks ...string) {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		data, _ := os.ReadFile(f)
		if err != nil || pid == os.Getpid() || !slices.ContainsFunc(marks, func(m string) bool { return bytes.Contains(data, []byte(m)) }) {
			continue
		}
		if unix.Kill(pid, unix.SIGKILL) == nil {
			pids = append(pids, pid)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); len(pids) > 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		pids = slices.DeleteFunc(pids, func(pid int) bool { return !process.Alive(pid, "") })
	}
}

// Unmount detaches the mounts under the directories, deepest first; it returns those it could not.
func Unmount(dirs ...string) map[string]error {
	failed := map[string]error{}
	for _, m := range MountsUnder(dirs...) {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			failed[m] = err
		}
	}
	return failed
}

// MountsUnder lists the mount points under the directories, deepest first.
func MountsUnder(dirs ...string) []string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	return mountsUnder(f, dirs...)
}

func mountsUnder(mounts io.Reader, dirs ...string) []string {
	var out []string
	s := bufio.NewScanner(mounts)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		mp := UnescapeMount(fields[1])
		if slices.ContainsFunc(dirs, func(d string) bool { return within(mp, d) }) {
			out = append(out, mp)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

var octal = regexp.MustCompile(`\\[0-7]{3}`)

// UnescapeMount undoes /proc/mounts' octal escapes (\040 for a space).
func UnescapeMount(s string) string {
	return octal.ReplaceAllStringFunc(s, func(m string) string {
		v, _ := strconv.ParseUint(m[1:], 8, 8)
		return string(rune(v))
	})
}

var cniNetnsRE = regexp.MustCompile(`/var/run/netns/cni-[0-9a-f-]+`)

// PodNetns are the network namespaces containerd made for a node's pods, read from its
// sandboxes' specs in its state directory.
func PodNetns(containerdState string) []string {
	seen := map[string]bool{}
	var out []string
	_ = filepath.WalkDir(containerdState, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "config.json" {
			return nil
		}
		data, _ := os.ReadFile(p)
		for _, m := range cniNetnsRE.FindAllString(string(data), -1) {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
		return nil
	})
	return out
}

// RemovePodNetns unmounts and removes the pods' network namespaces (their veths go with them).
func RemovePodNetns(paths []string) {
	for _, ns := range paths {
		_ = unix.Unmount(ns, unix.MNT_DETACH)
		_ = os.Remove(ns)
	}
}

// RemovePodLogLinks removes the kubelet's links in /var/log/containers to logs under podLogsDir.
func RemovePodLogLinks(podLogsDir string) {
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, link := range links {
		if target, err := os.Readlink(link); err == nil && strings.HasPrefix(target, podLogsDir+"/") {
			_ = os.Remove(link)
		}
	}
}
