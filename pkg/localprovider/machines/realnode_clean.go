package machines

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

const cgroupFS = "/sys/fs/cgroup"

// cgroupHierarchies are the cgroup v1 hierarchies mounted under /sys/fs/cgroup (the kubelet
// wants its cgroup root in each), or the single v2 one.
func cgroupHierarchies() []string {
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

// createCgroup makes the node's cgroup root in every hierarchy (the kubelet refuses a root that
// does not exist), cpuset's with its parent's cpus and memory nodes.
func createCgroup(root string) error {
	for _, h := range cgroupHierarchies() {
		parts := strings.Split(strings.Trim(root, "/"), "/")
		dir := h
		for _, p := range parts {
			parent := dir
			dir = filepath.Join(dir, p)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			if filepath.Base(h) == "cpuset" {
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
			}
		}
	}
	return nil
}

// cleanNode removes what a node made outside its processes, whether they stopped or were
// killed: the processes left in its cgroup, its own a killed provider left (kubelet,
// containerd, kube-proxy, shims), mounts under its directories, its pods' network namespaces
// and its own (the veths, the pods' bridge and every iptables rule of kube-proxy and the
// kubelet go with them), its cgroups and the kubelet's links to its pods' logs.
func cleanNode(ctx context.Context, l nodeLayout) {
	logger := klog.FromContext(ctx)
	killCgroup(l.cgroupRoot())
	killNodeProcesses(l)
	for _, m := range mountsUnder(l.dir, l.run) {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			logger.V(2).Info("Unmounting", "mount", m, "err", err)
		}
	}
	for _, ns := range podNetns(l) {
		_ = unix.Unmount(ns, unix.MNT_DETACH)
		_ = os.Remove(ns)
	}
	if _, err := os.Stat(l.netnsPath()); err == nil {
		if err := run(ctx, "ip", "netns", "del", l.netnsName()); err != nil {
			logger.Info("Removing the node's network namespace", "err", err)
		}
	}
	// The host's end goes with the namespace; one left by a failed start goes here.
	_ = run(ctx, "ip", "link", "del", l.hostVeth())
	removeCgroup(l.cgroupRoot())
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, link := range links {
		if target, err := os.Readlink(link); err == nil && strings.HasPrefix(target, l.podLogsDir()+"/") {
			_ = os.Remove(link)
		}
	}
	// Where containerd's shims keep their sockets: named by a hash, ours are gone with them.
	_ = os.RemoveAll(l.run)
}

// killCgroup kills every process left in the node's cgroups (its containers) and waits, up to
// 5 s, until they are gone: a cgroup is removed only once empty, and a killed process stays in
// it until its exit is done (a hibernated node's cgroups were left when they were removed at once).
func killCgroup(root string) {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := 0
		for _, h := range cgroupHierarchies() {
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

// removeCgroup removes the node's cgroups, deepest first, in every hierarchy, and the shared
// parent when it is empty.
func removeCgroup(root string) {
	// The kubelet also makes its cgroups in a hybrid host's v2 hierarchy (unified).
	hierarchies := cgroupHierarchies()
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

// killNodeProcesses kills the node's own processes left running and waits, up to 5 s, until
// they are gone: those whose command line names its directories or its machine's kubeconfig
// (its kubelet, containerd, kube-proxy and containerd's shims, which outlive containerd). A
// provider that was killed left them, outside the node's cgroups; they would hold its keys,
// ports and directories while a new boot used them.
func killNodeProcesses(l nodeLayout) {
	marks := [][]byte{[]byte(l.dir + "/"), []byte(l.run + "/"), []byte(filepath.Join(filepath.Dir(l.dir), kubeconfigFile) + "\x00")}
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		data, _ := os.ReadFile(f)
		if err != nil || pid == os.Getpid() || !slices.ContainsFunc(marks, func(m []byte) bool { return bytes.Contains(data, m) }) {
			continue
		}
		if unix.Kill(pid, unix.SIGKILL) == nil {
			pids = append(pids, pid)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); len(pids) > 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		pids = slices.DeleteFunc(pids, func(pid int) bool { return !alive(pid) })
	}
}

// alive says whether the process runs (a zombie does not: it holds nothing but its entry).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] != 'Z'
}

// mountsUnder lists the mount points under the directories, deepest first.
func mountsUnder(dirs ...string) []string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		mp := unescapeMount(fields[1])
		for _, d := range dirs {
			if mp == d || strings.HasPrefix(mp, d+"/") {
				out = append(out, mp)
				break
			}
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

var octal = regexp.MustCompile(`\\[0-7]{3}`)

// unescapeMount undoes /proc/mounts' octal escapes (\040 for a space).
func unescapeMount(s string) string {
	return octal.ReplaceAllStringFunc(s, func(m string) string {
		v, _ := strconv.ParseUint(m[1:], 8, 8)
		return string(rune(v))
	})
}

var cniNetnsRE = regexp.MustCompile(`/var/run/netns/cni-[0-9a-f-]+`)

// podNetns are the network namespaces containerd made for the node's pods, read from its
// sandboxes' specs in its state.
func podNetns(l nodeLayout) []string {
	seen := map[string]bool{}
	var out []string
	_ = filepath.WalkDir(filepath.Join(l.containerdDir(), "state"), func(p string, d os.DirEntry, err error) error {
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

// lastLine is the last non-empty line of a log file, for a condition's message.
func lastLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	line := lines[len(lines)-1]
	if len(line) > 300 {
		line = line[:300]
	}
	return line
}
