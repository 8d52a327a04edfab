package onenodecluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/realnode"
)

// nodeMarks pick the node's processes out of the host's by their command lines: containerd and
// its shims (which outlive it) name its directory, the kubelet its configuration, kube-proxy
// its kubeconfig.
func (o Options) nodeMarks() []string {
	return []string{o.containerdDir() + "/", o.path("kubelet-config.yaml") + "\x00", o.kubeconfig("kube-proxy") + "\x00"}
}

// controlPlaneMarks pick a killed run's etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler out of the host's processes.
func (o Options) controlPlaneMarks() []string {
	return []string{o.path("etcd") + "\x00", o.path("kube-apiserver") + "\x00",
		o.kubeconfig("kube-controller-manager") + "\x00", o.kubeconfig("kube-scheduler") + "\x00"}
}

// kubeletChains are the kubelet's own iptables chains, which kube-proxy --cleanup leaves.
var kubeletChains = []string{"KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT"}

// cleanNode removes what the node made outside its processes: its Pods' containers and
// containerd (then the shims, which outlive it, and their sockets), the mounts under
// CLUSTER_DIR, the Pods' network namespaces and veths, the kubelet's cgroups, kube-proxy's and
// the kubelet's iptables rules, the kubelet's links to the Pods' logs, the node's state and
// CNI's address leases. It stops containerd if this run started it.
func (c *cluster) cleanNode(ctx context.Context) {
	o := c.o
	netns := realnode.PodNetns(o.path("containerd", "state"))
	realnode.KillCgroup(kubeletCgrp)
	c.procs.stop("containerd")
	realnode.KillProcesses(o.nodeMarks()...)
	removeShimSockets(o.path("containerd", "config.toml"))
	realnode.Unmount(o.Dir)
	realnode.RemovePodNetns(netns)
	realnode.RemoveCgroup(kubeletCgrp)
	if _, err := os.Stat(o.bin("kube-proxy")); err == nil {
		_ = exec.CommandContext(ctx, o.bin("kube-proxy"), "--cleanup").Run()
	}
	for _, table := range []string{"filter", "nat", "mangle"} {
		removeChains(ctx, table, kubeletChains)
	}
	for _, veth := range bridgePorts(ctx) {
		_ = realnode.Run(ctx, "ip", "link", "del", veth)
	}
	realnode.RemovePodLogLinks(o.podLogsDir())
	for _, dir := range []string{o.containerdDir(), o.kubeletDir(), o.path("cni"), o.path("etcd"), "/var/lib/cni/networks/" + cniNetwork} {
		_ = os.RemoveAll(dir)
	}
}

// removeShimSockets removes the sockets of the shims started since containerd's configuration
// was written: containerd 1.6 keeps them in /run/containerd/s, named by a hash.
func removeShimSockets(config string) {
	st, err := os.Stat(config)
	if err != nil {
		return
	}
	entries, _ := os.ReadDir("/run/containerd/s")
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && info.Mode()&os.ModeSocket != 0 && info.ModTime().After(st.ModTime()) {
			_ = os.Remove(filepath.Join("/run/containerd/s", e.Name()))
		}
	}
}

// removeChains deletes the rules that jump to the chains in table, then the chains.
func removeChains(ctx context.Context, table string, chains []string) {
	out, err := exec.CommandContext(ctx, "iptables", "-t", table, "-S").Output()
	if err != nil {
		return
	}
	for _, rule := range rulesJumpingTo(string(out), chains) {
		_ = realnode.Run(ctx, "iptables", append([]string{"-t", table}, rule...)...)
	}
	for _, chain := range chains {
		if realnode.Run(ctx, "iptables", "-t", table, "-F", chain) == nil {
			_ = realnode.Run(ctx, "iptables", "-t", table, "-X", chain)
		}
	}
}

// rulesJumpingTo reads `iptables -S`: the rules that jump to one of chains, as the arguments
// that delete them.
func rulesJumpingTo(rules string, chains []string) [][]string {
	var out [][]string
	for _, line := range strings.Split(rules, "\n") {
		args := splitRule(line)
		if len(args) < 4 || args[0] != "-A" || args[len(args)-2] != "-j" {
			continue
		}
		for _, chain := range chains {
			if args[len(args)-1] == chain {
				args[0] = "-D"
				out = append(out, args)
				break
			}
		}
	}
	return out
}

// splitRule splits a line of `iptables -S` into arguments: on spaces, outside double quotes
// (a comment is printed quoted).
func splitRule(line string) []string {
	var args []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, have = !quoted, true
		case r == ' ' && !quoted:
			if have {
				args = append(args, cur.String())
			}
			cur.Reset()
			have = false
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		args = append(args, cur.String())
	}
	return args
}

// bridgePorts are the links plugged into the Pods' bridge: their veths.
func bridgePorts(ctx context.Context) []string {
	out, err := exec.CommandContext(ctx, "ip", "-o", "link", "show", "master", bridge).Output()
	if err != nil {
		return nil
	}
	return linkNames(string(out))
}

// linkNames reads `ip -o link show`: "12: veth1a2b@if3: <...> ...".
func linkNames(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		names = append(names, name)
	}
	return names
}
