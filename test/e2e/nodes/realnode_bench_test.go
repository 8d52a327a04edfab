package nodes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestRealNodeFigures measures P13 and P13m of docs/performance.md (REALNODE_BENCH=1; make
// bench-report ONLY=P13 runs it and turns its pairs into the figures). On this plane, in
// REALNODE_PAIRS (3) pairs whose order alternates, a local TenantCluster with 2 real workers and
// one with 2 kwok workers, the same version and OS, each created, timed and deleted before the next:
//   - P13: seconds from the apply of the TenantCluster to it Ready with 2 workers Ready (the same
//     watched condition, WaitReady, on both sides; the control plane is in both clocks).
//   - P13m: MiB per node, 10 s after Ready: the provider process's PSS growth since before the
//     apply, halved (what kwok and the provider hold for the cluster's nodes: a kwok node's whole
//     cost, as kwok runs inside the provider), plus on the real side each node's processes' PSS
//     (kubelet, kube-proxy, containerd, its shims and what runs under them: pause sandboxes, and
//     CoreDNS on one node), averaged over the 2 nodes. The nodes' pod cgroups' memory usage is
//     logged beside it (it counts pods' page cache too, and not the node's own processes).
//
// The tenant's control plane processes are the same on both sides and counted by neither.
func TestRealNodeFigures(t *testing.T) {
	if os.Getenv("REALNODE_BENCH") == "" {
		t.Skip("REALNODE_BENCH=1 runs the real-node figures (make bench-report ONLY=P13)")
	}
	realNodeRequirements(t)
	pairs := 3
	if v, err := strconv.Atoi(os.Getenv("REALNODE_PAIRS")); err == nil && v > 0 {
		pairs = v
	}
	ns := framework.Namespace(t, "rnbench")
	framework.MustApply(t, framework.LocalProviderConfigManifest(ns)+fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: local-real, namespace: %s}
spec: {provider: local, local: {nodeType: real}}
`, ns))
	var times, memory []string
	for k := range pairs {
		realFirst := k%2 == 0
		results := map[bool]realNodeRun{}
		for _, real := range []bool{realFirst, !realFirst} {
			results[real] = realNodeBenchRun(t, ns, fmt.Sprintf("p%d-%s", k, sideName(real)), real)
		}
		r, b := results[true], results[false]
		times = append(times, fmt.Sprintf("%.2f\t%.2f\t%t", r.seconds, b.seconds, realFirst))
		memory = append(memory, fmt.Sprintf("%.1f\t%.1f\t%t", r.mib, b.mib, realFirst))
		t.Logf("pair %d (%s first): Ready in %.1f s real, %.1f s kwok; %.1f MiB a real node, %.1f MiB a kwok node",
			k+1, sideName(realFirst), r.seconds, b.seconds, r.mib, b.mib)
	}
	if out := os.Getenv("REALNODE_PAIRS_OUT"); out != "" {
		for file, lines := range map[string][]string{"p13-pairs.tsv": times, "p13m-pairs.tsv": memory} {
			if err := os.WriteFile(filepath.Join(out, file), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func sideName(real bool) string {
	if real {
		return "real"
	}
	return "kwok"
}

type realNodeRun struct{ seconds, mib float64 }

// realNodeBenchRun creates a TenantCluster of 2 workers, real or kwok, times it to Ready,
// measures its nodes' memory and deletes it.
func realNodeBenchRun(t *testing.T, ns, name string, real bool) realNodeRun {
	t.Helper()
	provider := providerPID(t)
	before := pssKiB(provider)
	manifest := framework.LocalClusterManifest(ns, name, framework.PinnedVersion, bootstrap.OSTalos, 2)
	if real {
		manifest = strings.Replace(manifest, "providerConfigRef: {name: local}", "providerConfigRef: {name: local-real}", 1)
	}
	start := time.Now()
	framework.MustApply(t, manifest)
	tc := framework.WaitReady(t, ns, name, 2, 4*time.Minute)
	run := realNodeRun{seconds: time.Since(start).Seconds()}
	time.Sleep(10 * time.Second)
	growth := pssKiB(provider) - before
	perNode := float64(growth) / 2
	detail := fmt.Sprintf("provider PSS %+.1f MiB", float64(growth)/1024)
	if real {
		_, tenant := framework.MintKubeconfig(t, ns, name)
		nodes, err := tenant.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 2 {
			t.Fatalf("the real cluster's Nodes: %v (%d)", err, len(nodes.Items))
		}
		var sum int64
		for _, n := range nodes.Items {
			key := realNodeMachine(t, tenant, n.Name)
			kib, procs := realNodePSSKiB(t, key)
			sum += kib
			detail += fmt.Sprintf("; %s: %.1f MiB PSS over %d processes, pod cgroup %s", n.Name, float64(kib)/1024, procs, realNodeCgroupMemory(key))
		}
		perNode += float64(sum) / 2
	}
	run.mib = perNode / 1024
	t.Logf("%s: Ready with 2 %s workers in %.2f s; %s", name, sideName(real), run.seconds, detail)
	cp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	framework.DeleteCluster(t, ns, name, string(cp.GetUID()))
	if real {
		if left := realNodeLeftovers(); len(left) > 0 {
			t.Fatalf("the deleted cluster's real nodes left:\n  %s", strings.Join(left, "\n  "))
		}
	}
	return run
}

// providerPID is the plane's butler-localprovider (kwok runs inside it).
func providerPID(t *testing.T) string {
	t.Helper()
	pids := processesNaming(framework.Plane.Dir + "/butler-localprovider.kubeconfig")
	sort.Strings(pids)
	for _, pid := range pids {
		if data, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil && strings.HasSuffix(strings.Split(string(data), "\x00")[0], "butler-localprovider") {
			return pid
		}
	}
	t.Fatalf("no butler-localprovider of the plane among %v", pids)
	return ""
}

// pssKiB is a process's proportional set size in KiB (0 when it is gone).
func pssKiB(pid string) int64 {
	data, _ := os.ReadFile("/proc/" + pid + "/smaps_rollup")
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}

// realNodeCgroupMemory is the memory usage of the pod cgroup of the machine key's node (the
// cgroupRoot of its kubelet's configuration), as the kernel reports it.
func realNodeCgroupMemory(key string) string {
	config, err := os.ReadFile(filepath.Join(framework.Plane.Dir, "machines", key, "node", "kubelet-config.yaml"))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	root := ""
	for _, line := range strings.Split(string(config), "\n") {
		if v, ok := strings.CutPrefix(line, "cgroupRoot: "); ok {
			root = strings.TrimSpace(v)
		}
	}
	for _, f := range []string{"/sys/fs/cgroup/memory" + root + "/memory.usage_in_bytes", "/sys/fs/cgroup" + root + "/memory.current"} {
		if data, err := os.ReadFile(f); err == nil {
			if v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil {
				return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20))
			}
		}
	}
	return "unknown"
}
