package main

import "fmt"

// P13 and P13m: real worker nodes beside kwok's, measured by test/e2e/nodes' TestRealNodeFigures on
// the e2e plane, which writes its pairs to a file each.

const realNodeCommand = "make bench-report ONLY=P13 (REALNODE_BENCH=1 REALNODE_PAIRS=%d go test -run '^TestRealNodeFigures$' ./test/e2e/nodes/, as root with make test-realnode's dependencies)"

func p13(pairs int) figure {
	return figure{
		ID:    "P13",
		Title: "Create -> Ready of a local TenantCluster with 2 real worker nodes, against one with 2 kwok nodes.",
		What: "a local TenantCluster (a ProviderConfig with spec.local.nodeType real) of 2 Talos workers applied; the clock stops when it is " +
			"Ready with 2 workers Ready (its control plane's start is in the clock); each real node joins, boots a network namespace, " +
			"containerd (importing the node images), a kubelet and kube-proxy",
		Baseline: "the same TenantCluster on a local ProviderConfig without nodeType (kwok nodes: the machines join the same way, " +
			"kwok keeps their Nodes Ready), the same watched condition",
		Subject: "2 real nodes", Base: "2 kwok nodes", Unit: "s", Better: "lower",
		Command: fmt.Sprintf(realNodeCommand, pairs),
		Notes: []string{"Both sides run on one e2e plane, one cluster at a time, each deleted (and its nodes' traces checked gone) " +
			"before the next."},
	}
}

func p13m(pairs int) figure {
	return figure{
		ID:    "P13m",
		Title: "Memory of a real worker node, against a kwok node's.",
		What: "10 s after P13's real cluster is Ready, per node: the PSS of each node's kubelet, kube-proxy, containerd, containerd's " +
			"shims and what runs under them (pause sandboxes, and the tenant's CoreDNS on one of the two nodes), averaged over the 2 " +
			"nodes, plus half the provider process's PSS growth since before the apply",
		Baseline: "10 s after P13's kwok cluster is Ready: half the provider process's PSS growth since before the apply (kwok runs " +
			"inside the provider: that growth is all a kwok node costs, and what the provider keeps for the cluster's machines on " +
			"either side)",
		Subject: "real node", Base: "kwok node", Unit: "MiB", Better: "lower",
		Command: fmt.Sprintf(realNodeCommand, pairs),
		NoRatio: "a kwok node costs less than the provider's PSS resolves",
		Notes: []string{"The tenant's control plane processes are the same on both sides and counted by neither. The provider's " +
			"PSS growth is the Go heap of a busy process read at one moment: a kwok node costs less than it resolves (2 kwok nodes " +
			"grew it by +2.5, -0.2 and +0.1 MiB in the first report, 2 real nodes by +13.7, +0.7 and +0.3 MiB), so the sides are " +
			"given side by side, with no ratio. The test's log gives each real node's " +
			"pod cgroup memory usage beside it (pods only, page cache included)."},
	}
}
