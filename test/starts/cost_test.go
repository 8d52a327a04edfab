package starts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/test/localplane"
)

var tenantClusters = schema.GroupVersionResource{Group: "butler.butlerlabs.dev", Version: "v1alpha1", Resource: "tenantclusters"}

// A start of COST_N local TenantClusters at once, and COST_SINGLES of one alone, with this tree's
// butler-localprovider (the subject) and COST_BASELINE_PROVIDER (another revision's, built
// beforehand), swapped into one plane between sides (SIGKILLed with no tenant left, started
// again on its command line). Each side measures the CPU the tenants' kube-apiservers took until
// each was Ready, butler-localprovider's and the machine's over the start, the time to all Ready,
// and each single's create -> ControlPlaneReady (seen by a watch). COST_PAIRS pairs, the order
// alternating from COST_PAIR; the kube binaries are COST_BIN's. Rows go to
// _output/bench/start-cost.tsv. Heavy: run it alone (about 2 min a side here).
func TestTenantStartCost(t *testing.T) {
	baseline, bin := os.Getenv("COST_BASELINE_PROVIDER"), os.Getenv("COST_BIN")
	if baseline == "" || bin == "" {
		t.Skip("COST_BASELINE_PROVIDER and COST_BIN not set")
	}
	// Whole pairs only, within COST_BUDGET_MIN minutes (the plane's start counted): a heavy run
	// here must stay under 15 minutes, and a test killed by its timeout leaves the plane running.
	deadline := time.Now().Add(time.Duration(envInt("COST_BUDGET_MIN", 13)) * time.Minute)
	dir := t.TempDir()
	sideBin := filepath.Join(dir, "bin")
	linkBinaries(t, bin, sideBin)
	p, err := localplane.Start(root(t), filepath.Join(dir, "local"), 10*time.Minute,
		"BIN="+sideBin, "RESTART_GRACE=60")
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
	defer func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		if left := processesUnder(sideBin + "/"); len(left) > 0 {
			localplane.Kill(left)
			t.Errorf("the stop left %d processes: %v", len(left), left)
		}
	}()
	providers := map[string]string{"baseline": baseline, "subject": filepath.Join(dir, "subject-provider")}
	copyFile(t, filepath.Join(sideBin, "butler-localprovider"), providers["subject"])
	kubectl(t, p, "apiVersion: v1\nkind: Namespace\nmetadata: {name: cost}\n---\n"+
		"apiVersion: butler.butlerlabs.dev/v1alpha1\nkind: ProviderConfig\nmetadata: {name: local, namespace: cost}\nspec: {provider: local}\n", "apply", "-f", "-")
	var longest time.Duration
	first := envInt("COST_PAIR", 0)
	for k := first; k < first+envInt("COST_PAIRS", 1); k++ {
		if time.Until(deadline) < 2*longest+longest/4 {
			t.Logf("pair %d not run: %s left, a side took up to %s", k, time.Until(deadline).Round(time.Second), longest.Round(time.Second))
			break
		}
		order := []string{"baseline", "subject"}
		if k%2 == 1 {
			order = []string{"subject", "baseline"}
		}
		for _, side := range order {
			began := time.Now()
			swapProvider(t, p, providers[side])
			startCost(t, p, k, side, dir)
			longest = max(longest, time.Since(began))
		}
	}
}

// startCost is one side of one pair.
func startCost(t *testing.T, p *localplane.Plane, pair int, side, dir string) {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := dynamic.NewForConfigOrDie(cfg).Resource(tenantClusters).Namespace("cost")
	row := func(metric string, v float64) {
		costRow(t, fmt.Sprintf("%d\t%s\t%s\t%.3f", pair, side, metric, v))
	}

	// N at once.
	n := envInt("COST_N", 8)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c%02d", i)
	}
	// The tenants' datastore is butler-localprovider run as etcd: counted apart.
	providerBin := filepath.Join(dir, "bin", "butler-localprovider")
	provider, store := pidOf(t, providerBin, "--kubeconfig"), pidOf(t, providerBin, "etcd")
	provider0, store0, machine0 := cpuSeconds(provider), cpuSeconds(store), machineSeconds()
	readyAt, apiCPU := waitReady(t, p, client, names)
	row("all_ready_s", slices.Max(readyAt))
	row("apiservers_cpu_at_own_ready_s", apiCPU)
	row("apiservers_cpu_at_all_ready_s", tenantAPIServersCPU(dir))
	row("localprovider_cpu_s", cpuSeconds(provider)-provider0)
	if now := pidOf(t, providerBin, "etcd"); now != store {
		store0 = 0 // started (or started again) during the start: all of its CPU is the start's
		store = now
	}
	row("datastore_etcd_cpu_s", cpuSeconds(store)-store0)
	row("machine_cpu_s", machineSeconds()-machine0)
	kubectl(t, p, "", "delete", "tenantclusters", "--all", "-n", "cost", "--timeout=5m")

	// One alone, COST_SINGLES times.
	for i := range envInt("COST_SINGLES", 3) {
		name := fmt.Sprintf("s%02d", i)
		readyAt, _ := waitReady(t, p, client, []string{name})
		row("single_ready_s", readyAt[0])
		kubectl(t, p, "", "delete", "tenantcluster", name, "-n", "cost", "--timeout=5m")
	}
}

// swapProvider SIGKILLs the plane's butler-localprovider (no tenant is left then), puts binary
// in its place and starts it again with the same command line, environment and log, recording
// its pid where the plane stops it by (test/e2e/framework's RestartPlaneProcess does the same).
func swapProvider(t *testing.T, p *localplane.Plane, binary string) {
	args, startAgain := localplane.KillForRestart(t, p.Dir, "butler-localprovider")
	copyFile(t, binary, args[0]+".new")
	if err := os.Rename(args[0]+".new", args[0]); err != nil {
		t.Fatal(err)
	}
	startAgain()
	t.Logf("butler-localprovider is now %s", binary)
}

func copyFile(t *testing.T, src, dst string) {
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// processesUnder are the processes whose binary's path begins with prefix.
func processesUnder(prefix string) []localplane.Process {
	var out []localplane.Process
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		data, _ := os.ReadFile(f)
		if strings.HasPrefix(string(data), prefix) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			out = append(out, localplane.Process{PID: pid, Cmdline: strings.ReplaceAll(string(data), "\x00", " ")})
		}
	}
	return out
}

// waitReady applies TenantClusters of names and waits until each has ControlPlaneReady True,
// seen by a watch begun before the apply. It returns the seconds from the apply to each Ready,
// and the CPU seconds each one's kube-apiserver had taken when its Ready was seen, summed.
func waitReady(t *testing.T, p *localplane.Plane, client dynamic.ResourceInterface, names []string) ([]float64, float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w, err := client.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var manifest strings.Builder
	for _, name := range names {
		fmt.Fprintf(&manifest, "---\napiVersion: butler.butlerlabs.dev/v1alpha1\nkind: TenantCluster\nmetadata: {name: %s, namespace: cost}\n"+
			"spec:\n  kubernetesVersion: v1.36.3\n  providerConfigRef: {name: local}\n  workers: {replicas: 0, machineTemplate: {os: {type: talos}}}\n", name)
	}
	applied := time.Now()
	kubectl(t, p, manifest.String(), "apply", "-f", "-")
	ready, cpu := map[string]float64{}, 0.0
	for len(ready) < len(names) {
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("the watch ended with %d of %d Ready", len(ready), len(names))
		}
		tc, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || !slices.Contains(names, tc.GetName()) || ready[tc.GetName()] != 0 || !controlPlaneReady(tc) {
			continue
		}
		ready[tc.GetName()] = time.Since(applied).Seconds()
		endpoint, _, _ := unstructured.NestedString(tc.Object, "status", "controlPlaneEndpoint")
		port := endpoint[strings.LastIndex(endpoint, ":")+1:]
		cpu += cpuSeconds(pidOf(t, "kube-apiserver", "--secure-port="+port))
	}
	var out []float64
	for _, name := range names {
		out = append(out, ready[name])
	}
	return out, cpu
}

func controlPlaneReady(tc *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(tc.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "ControlPlaneReady" && m["status"] == "True" {
			return true
		}
	}
	return false
}

func kubectl(t *testing.T, p *localplane.Plane, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", p.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

// linkBinaries makes dst a BIN of links to src's binaries but butler-localprovider (the plane
// builds each side's own there).
func linkBinaries(t *testing.T, src, dst string) {
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "butler-localprovider" {
			if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// pidOf is the process whose first argument ends with binary and whose command line has the
// argument arg (or one beginning with arg=); 0 when none.
func pidOf(t *testing.T, binary, arg string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		argv := strings.Split(string(data), "\x00")
		if strings.HasSuffix(argv[0], binary) && slices.ContainsFunc(argv, func(a string) bool { return a == arg || strings.HasPrefix(a, arg+"=") }) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			return pid
		}
	}
	t.Logf("no process of %s %s", binary, arg)
	return 0
}

// tenantAPIServersCPU is the CPU seconds of the kube-apiservers of tenants under dir.
func tenantAPIServersCPU(dir string) float64 {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	sum := 0.0
	for _, f := range procs {
		data, err := os.ReadFile(f)
		argv := strings.Split(string(data), "\x00")
		if err == nil && strings.HasSuffix(argv[0], "/kube-apiserver") && strings.Contains(string(data), dir+"/local/tenants/") {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			sum += cpuSeconds(pid)
		}
	}
	return sum
}

// cpuSeconds is a process's user and system time (0 when it is gone).
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid == 0 {
		return 0
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// machineSeconds is the CPU time of the whole machine not idle, from /proc/stat.
func machineSeconds() float64 {
	data, _ := os.ReadFile("/proc/stat")
	f := strings.Fields(strings.SplitN(string(data), "\n", 2)[0])
	sum := 0.0
	for i, v := range f[1:] {
		if x, err := strconv.ParseFloat(v, 64); err == nil && i != 3 && i != 4 && i < 7 { // not idle, iowait, steal, guest
			sum += x
		}
	}
	return sum / 100
}

func costRow(t *testing.T, line string) {
	t.Log(line)
	path := filepath.Join(root(t), "_output", "bench", "start-cost.tsv")
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintf(f, "%s\t%s\n", time.Now().Format(time.RFC3339), line)
		f.Close()
	}
}
