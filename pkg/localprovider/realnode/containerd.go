package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// PauseImage is the sandbox image every real node's containerd uses: the pause image
// hack/build-node-images.sh builds from source under this name.
const PauseImage = "registry.k8s.io/pause:3.10"

// Containerd is one node's containerd 1.6: its own root, state and socket, and CRI's CNI
// configuration, either fixed (a conflist in CNIConfDir) or rendered from CNITemplate once the
// kubelet hands containerd the Node's pod CIDR.
type Containerd struct {
	Root, State, Socket string
	CNIConfDir          string
	CNITemplate         string // empty: CNIConfDir holds the configuration
	// RestrictOOMScoreAdj keeps Pod sandboxes at containerd's own oom_score_adj: without
	// CAP_SYS_RESOURCE no process may lower it, which the kubelet asks for them.
	RestrictOOMScoreAdj bool
	Runc                string // runc's binary (empty: runc on PATH)
}

// Config is the configuration file's content.
func (c Containerd) Config() string {
	template := ""
	if c.CNITemplate != "" {
		template = fmt.Sprintf("    conf_template = %q\n", c.CNITemplate)
	}
	runc := ""
	if c.Runc != "" {
		runc = fmt.Sprintf("        BinaryName = %q\n", c.Runc)
	}
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = %[6]t
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
%[8]s  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
%[9]s`, c.Root, c.State, c.Socket, c.Socket+".ttrpc", PauseImage, c.RestrictOOMScoreAdj, c.CNIConfDir, template, runc)
}

// CanLowerOOMScore says whether this process may lower its oom_score_adj (CAP_SYS_RESOURCE),
// which the kubelet asks of containerd for Pod sandboxes.
func CanLowerOOMScore() bool {
	data, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return false
	}
	if os.WriteFile("/proc/self/oom_score_adj", []byte("-1"), 0) != nil {
		return false
	}
	_ = os.WriteFile("/proc/self/oom_score_adj", data, 0)
	return true
}

// ImportImages imports the OCI archives into the k8s.io namespace of the containerd at socket.
func ImportImages(ctx context.Context, socket string, archives []string) error {
	for _, archive := range archives {
		if err := Run(ctx, "ctr", "--address", socket, "-n", "k8s.io", "images", "import", archive); err != nil {
			return fmt.Errorf("importing %s: %w", archive, err)
		}
	}
	return nil
}

// Run runs a command; its error carries the command line and its output.
func Run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
