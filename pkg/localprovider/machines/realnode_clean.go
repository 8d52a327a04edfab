package machines

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/realnode"
)

// cleanNode removes what a node made outside its processes, whether they stopped or were
// killed: the processes left in its cgroup, its own a killed provider left (kubelet,
// containerd, kube-proxy, shims), mounts under its directories, its pods' network namespaces
// and its own (the veths, the pods' bridge and every iptables rule of kube-proxy and the
// kubelet go with them), its cgroups and the kubelet's links to its pods' logs.
func cleanNode(ctx context.Context, l nodeLayout) {
	logger := klog.FromContext(ctx)
	realnode.KillCgroup(l.cgroupRoot())
	killNodeProcesses(l)
	for m, err := range realnode.Unmount(l.dir, l.run) {
		logger.V(2).Info("Unmounting", "mount", m, "err", err)
	}
	realnode.RemovePodNetns(realnode.PodNetns(filepath.Join(l.containerdDir(), "state")))
	if _, err := os.Stat(l.netnsPath()); err == nil {
		if err := run(ctx, "ip", "netns", "del", l.netnsName()); err != nil {
			logger.Info("Removing the node's network namespace", "err", err)
		}
	}
	// The host's end goes with the namespace; one left by a failed start goes here.
	_ = run(ctx, "ip", "link", "del", l.hostVeth())
	realnode.RemoveCgroup(l.cgroupRoot())
	realnode.RemovePodLogLinks(l.podLogsDir())
	// Where containerd's shims keep their sockets: named by a hash, ours are gone with them.
	_ = os.RemoveAll(l.run)
}

// killNodeProcesses kills the node's own processes left running: those whose command line
// names its directories or its machine's kubeconfig.
func killNodeProcesses(l nodeLayout) {
	realnode.KillProcesses(l.dir+"/", l.run+"/", filepath.Join(filepath.Dir(l.dir), kubeconfigFile)+"\x00")
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
