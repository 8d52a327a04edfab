package machines

import (
	"context"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

// kubeletWrites are the places a real node's kubelet and containerd write (keys among them), as
// their flags and configurations name them, or the host's default when they name none.
func kubeletWrites(l nodeLayout, spec BootSpec) map[string]string {
	args := kubeletArgs(l, spec, "10.250.0.2")
	flag := func(name, def string) string {
		for i, a := range args {
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
		}
		return def
	}
	setting := func(config, re, def string) string {
		if m := regexp.MustCompile(re).FindStringSubmatch(config); m != nil {
			return strings.Trim(m[1], `"`)
		}
		return def
	}
	kubelet := kubeletConfig(l, "10.250.0.2", filepath.Join(spec.MachineDir, caFile), spec.ProviderID, nil, "")
	containerd := containerdConfig(l, false)
	return map[string]string{
		"the kubelet's certificate directory (serving keys)":   flag("--cert-dir", "/var/lib/kubelet/pki"),
		"the kubelet's root directory (pods' tokens, secrets)": flag("--root-dir", "/var/lib/kubelet"),
		"the kubelet's pods' logs":                             setting(kubelet, `(?m)^podLogsDir: (\S+)$`, "/var/log/pods"),
		"containerd's root":                                    setting(containerd, `(?m)^root = (\S+)$`, "/var/lib/containerd"),
		"containerd's state":                                   setting(containerd, `(?m)^state = (\S+)$`, "/run/containerd"),
		"the pods' address leases":                             setting(renderCNITemplate(l), `"dataDir": "([^"]+)"`, "/var/lib/cni/networks"),
	}
}

// A real node's delete removes every file its kubelet wrote: its serving keys and certificates,
// its pods' tokens and logs, containerd's state. Each place the kubelet writes is the node's
// own directory (never the host's /var/lib/kubelet/pki, which every node's kubelet shared and
// none removed before its --cert-dir was set: this test fails there), and goes with the node,
// whether this process booted it, the cluster slept first (its nodes stopped, then deleted), or
// a provider killed midway left it.
func TestRealNodeDeleteRemovesWhatTheKubeletWrote(t *testing.T) {
	for _, how := range []string{"booted here", "hibernated, then deleted", "left by a killed provider"} {
		t.Run(how, func(t *testing.T) {
			state := t.TempDir()
			r := NewRealNodes(RealNodesOptions{Bridge: "test-no-such-bridge", Prefix: netip.MustParsePrefix("10.250.0.0/29"),
				RunDir: t.TempDir()}, state, nil)
			key, machineDir := "ns/m0", filepath.Join(state, "machines", "ns", "m0")
			spec := BootSpec{Cluster: "ns/c", MachineDir: machineDir, NodeName: "m0", ProviderID: "local://ns/m0"}
			l := r.layout(key, machineDir)
			var written []string
			for what, dir := range kubeletWrites(l, spec) {
				if !within(dir, l.dir) && !within(dir, l.run) {
					t.Errorf("%s is %s, not the node's (%s or %s): nothing removes it with the node", what, dir, l.dir, l.run)
					continue
				}
				written = append(written, kubeletFiles(t, dir)...)
			}
			switch how {
			case "booted here":
				r.nodes[key] = &realNode{layout: l, cluster: spec.Cluster, procs: map[string]*nodeProc{}}
			case "hibernated, then deleted":
				r.nodes[key] = &realNode{layout: l, cluster: spec.Cluster, procs: map[string]*nodeProc{}}
				r.StopCluster(context.Background(), spec.Cluster)
				if left := existing(written); len(left) > 0 {
					t.Errorf("the sleeping cluster's node left:\n  %s", strings.Join(left, "\n  "))
				}
			}
			r.Stop(context.Background(), key, machineDir)
			if left := existing(written); len(left) > 0 {
				t.Errorf("the deleted node left:\n  %s", strings.Join(left, "\n  "))
			}
			for _, dir := range []string{l.dir, l.run} {
				_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
					if err == nil {
						t.Errorf("the deleted node left %s", p)
					}
					return nil
				})
			}
		})
	}
}

// kubeletFiles writes in dir what a kubelet (or containerd) writes there, and returns the paths.
func kubeletFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range []string{"kubelet-server-2026-11-29-05-23-09.pem", "kubelet-client-current.pem",
		"pods/0f1e/volumes/kubernetes.io~projected/kube-api-access/token", "io.containerd.metadata.v1.bolt/meta.db"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("-----BEGIN EC PRIVATE KEY-----"), 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	current := filepath.Join(dir, "kubelet-server-current.pem")
	if err := os.Symlink(out[0], current); err != nil {
		t.Fatal(err)
	}
	return append(out, current)
}

func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// A provider that was killed leaves its nodes' kubelet, containerd and kube-proxy running
// (outside the node's cgroups), holding the node's keys in memory, its ports and directories:
// the node's cleanup (its delete, or its next boot's first step) kills them, by the node's
// directories or its machine's kubeconfig in their command lines, and nothing else. Before,
// they outlived the delete.
func TestRealNodeCleanKillsWhatAKilledProviderLeft(t *testing.T) {
	state := t.TempDir()
	r := NewRealNodes(RealNodesOptions{Bridge: "test-no-such-bridge", Prefix: netip.MustParsePrefix("10.250.0.0/29"),
		RunDir: t.TempDir()}, state, nil)
	key, machineDir := "ns/m0", filepath.Join(state, "machines", "ns", "m0")
	l := r.layout(key, machineDir)
	other := r.layout("ns/m1", filepath.Join(state, "machines", "ns", "m1"))
	// Each a sleep whose command line starts as a node process's (bash's exec -a names it).
	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command("bash", "-c", `exec -a "$0" sleep 300`, strings.Join(args, " "))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
		return cmd
	}
	left := map[string]*exec.Cmd{
		"kubelet":    run("kubelet", "--config", l.kubeletConfig(), "--root-dir", l.kubeletDir()),
		"containerd": run("containerd", "--config", l.containerdConfig()),
		"kube-proxy": run("kube-proxy", "--hostname-override", "m0", "--kubeconfig", filepath.Join(machineDir, kubeconfigFile)),
	}
	kept := map[string]*exec.Cmd{
		"another node's kubelet":            run("kubelet", "--root-dir", other.kubeletDir()),
		"a process naming a sibling's file": run("cat", machineDir+"-old/"+kubeconfigFile),
	}
	time.Sleep(100 * time.Millisecond) // bash has exec'd
	for name, cmd := range left {
		if !process.Alive(cmd.Process.Pid, "") {
			t.Fatalf("the stand-in for the node's %s did not start", name)
		}
	}
	r.Stop(context.Background(), key, machineDir)
	for name, cmd := range left {
		if process.Alive(cmd.Process.Pid, "") {
			t.Errorf("the deleted node's %s (pid %d) still runs", name, cmd.Process.Pid)
		}
	}
	for name, cmd := range kept {
		if !process.Alive(cmd.Process.Pid, "") {
			t.Errorf("%s (pid %d) was killed with the node", name, cmd.Process.Pid)
		}
	}
}
