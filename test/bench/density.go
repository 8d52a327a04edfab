package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
)

// densityOptions configure -density: many hibernated clusters on one machine.
type densityOptions struct {
	n, awake, wakeSample int
	version              string
	idle, timeout        time.Duration
	// census: the management etcd's keys per resource and the servers' heap profiles, with
	// every cluster asleep; hold: how long the plane stays up after the report (to look inside).
	census bool
	hold   time.Duration
	// late: measure the RSS again this long after the report.
	late time.Duration
	// record: the file P8's run is kept in for the report (bench-report's -density-record);
	// commit names the code measured.
	record, commit string
	// ran: each cluster runs once before it sleeps (ranOnce), as one a team has used.
	ran bool
}

// densityData is what -density-ran writes into each cluster before it sleeps: ConfigMaps of
// random bytes (base64, which no compression flatters).
const (
	densityConfigMaps   = 10
	densityConfigMapLen = 8 << 10
)

const (
	densityNamespace = "bench-density"
	densitySettle    = 30 * time.Second
	// densityDrain bounds how long -density-ran waits, after -density-timeout, for the clusters
	// created to run once and sleep.
	densityDrain = 10 * time.Minute
)

// densityEnv is what the plane of -density needs of the local plane: two ports per tenant (the
// wake-on-request listener's and kube-apiserver's), and every tenant on the one datastore.
var densityEnv = []string{"TENANT_PORT_RANGE=12000-32000", "BUTLER_LOCALPROVIDER_ARGS=--datastore-max-tenants=0"}

// runDensity creates o.n TenantClusters with hibernation {hibernated: true, wakeOnRequest: true}
// and no workers, at most o.awake of them not yet Hibernated at any time (a cluster created
// hibernated with wake on request is readied without starting: its control plane first starts
// on the first request); then it measures the management plane's RSS and idle CPU against the
// same figures before the first create, checks that every cluster's endpoint is held by a
// listener (without connecting: a connection would wake it), and wakes o.wakeSample of them
// with kubectl.
func runDensity(ctx context.Context, p *plane, o densityOptions, out string) error {
	butler, kube, _ := p.unthrottledClients()
	d := &densityRun{o: o, p: p, butler: butler, started: time.Now()}
	if err := localProviderConfig(ctx, butler, kube, densityNamespace); err != nil {
		return err
	}
	var err error
	if d.procs, err = p.processes(); err != nil {
		return err
	}
	d.baseline()
	if err := d.createAll(ctx); err != nil {
		return err
	}
	d.measureAsleep(ctx)
	if err := d.checkHeld(ctx); err != nil {
		return err
	}
	d.wake(ctx)
	if err := d.write(out); err != nil {
		return err
	}
	if o.record != "" {
		if err := saveJSON(o.record, d.figure()); err != nil {
			return err
		}
		logf("density: wrote %s", o.record)
	}
	if o.census {
		if err := densityCensus(ctx, p, o, out); err != nil {
			return err
		}
	}
	if o.hold > 0 {
		logf("density: the plane stays up for %s (-density-hold): %s", o.hold, p.up.Kubeconfig)
		select {
		case <-ctx.Done():
		case <-time.After(o.hold):
		}
	}
	return nil
}

// densityRun is one -density run: its plane, and what its steps measured.
type densityRun struct {
	o       densityOptions
	started time.Time
	p       *plane
	butler  clientset.Interface
	procs   map[string]int
	// loadBefore and before are the load average and the plane's usage before the first create.
	loadBefore string
	before     map[string]usage
	// pssBefore and pssAfter are the plane's PSS, summed, read over each window (measurePlane).
	pssBefore, pssAfter []int64
	// created, asleep and the most awake (and with processes) at once, while creating.
	created, asleep, maxAwake, maxProcs int
	lastCreate, allAsleep               time.Duration
	// toSleep is each cluster's create -> Hibernated; createdAt the start of those not yet asleep.
	toSleep   sample
	createdAt map[string]time.Time
	// after and tenants are the plane's usage and the tenant processes with every cluster asleep.
	after   map[string]usage
	tenants int
	// clusters as listed at the end; held of them by a listener.
	clusters []v1alpha1.TenantCluster
	held     int
	// wakes are the sample woken by a request, wakeErrors those that failed.
	wakes      sample
	wakeErrors int
	// filled are the -density-ran clusters whose data is written and whose sleep is asked for.
	filled map[string]bool
}

// baseline lets the plane settle (its own start, caches filling and leader elections, is not
// part of the baseline) and measures it with no cluster.
func (d *densityRun) baseline() {
	logf("density: the plane settles for %s", densitySettle)
	time.Sleep(densitySettle)
	d.loadBefore = loadavg()
	logf("density: baseline over %s with no cluster", d.o.idle)
	d.before, d.pssBefore = measurePlane(d.procs, d.o.idle)
}

// createAll creates the clusters, at most o.awake not yet asleep, until all are asleep or
// o.timeout ends. With -density-ran, those created by then still run once and go to sleep
// (for at most densityDrain more): measured awake, they would count as asleep clusters' cost.
func (d *densityRun) createAll(ctx context.Context) error {
	start := time.Now()
	lastLog := time.Now()
	d.createdAt = map[string]time.Time{}
	stopped := false
	for d.asleep < d.o.n {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Since(start) > d.o.timeout {
			if !stopped {
				logf("density: stopped creating after %s with %d created, %d hibernated", d.o.timeout, d.created, d.asleep)
				stopped = true
			}
			if !d.o.ran || d.asleep >= d.created || time.Since(start) > d.o.timeout+densityDrain {
				break
			}
		}
		list, err := d.butler.ButlerV1alpha1().TenantClusters(densityNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		d.countAsleep(list.Items)
		if d.o.ran {
			d.ranOnce(ctx, list.Items)
		}
		if !stopped {
			if err := d.createUpTo(ctx, start); err != nil {
				return err
			}
		}
		if time.Since(lastLog) > 15*time.Second || d.asleep == d.o.n {
			lastLog = time.Now()
			logf("density: %d created, %d hibernated after %s (at most %d clusters with processes so far)", d.created, d.asleep, secs(time.Since(start)), d.maxProcs)
		}
		time.Sleep(time.Second)
	}
	d.allAsleep = time.Since(start)
	return nil
}

// countAsleep counts the clusters of items asleep, takes each newly asleep one's time to
// sleep, and the most clusters awake (and with processes) at once.
func (d *densityRun) countAsleep(items []v1alpha1.TenantCluster) {
	d.asleep = 0
	for i := range items {
		tc := &items[i]
		if hibernatedNow(tc) {
			d.asleep++
			if t, ok := d.createdAt[tc.Name]; ok {
				d.toSleep.add(time.Since(t))
				delete(d.createdAt, tc.Name)
			}
		}
	}
	d.maxAwake = max(d.maxAwake, d.created-d.asleep)
	if tenants, err := d.p.tenantProcesses(); err == nil {
		d.maxProcs = max(d.maxProcs, len(tenants))
	}
}

// createUpTo creates clusters until o.awake are not yet asleep or o.n are created.
func (d *densityRun) createUpTo(ctx context.Context, start time.Time) error {
	for awake := d.created - d.asleep; awake < d.o.awake && d.created < d.o.n; awake++ {
		name := fmt.Sprintf("d-%04d", d.created+1)
		if _, err := d.butler.ButlerV1alpha1().TenantClusters(densityNamespace).Create(ctx, densityCluster(name, d.o.version, d.o.ran), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s: %w", name, err)
		}
		d.createdAt[name] = time.Now()
		d.created++
		d.lastCreate = time.Since(start)
	}
	return nil
}

// measureAsleep waits for the tenant processes to end and the plane to settle, then measures
// it with every cluster asleep.
func (d *densityRun) measureAsleep(ctx context.Context) {
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		tenants, err := d.p.tenantProcesses()
		return err == nil && len(tenants) == 0, nil
	}); err != nil {
		logf("density: tenant processes still run with every cluster hibernated")
	}
	time.Sleep(densitySettle)
	// Those still in flight when -density-timeout ended have gone to sleep meanwhile.
	if list, err := d.butler.ButlerV1alpha1().TenantClusters(densityNamespace).List(ctx, metav1.ListOptions{}); err == nil {
		d.asleep = 0
		for i := range list.Items {
			if hibernatedNow(&list.Items[i]) {
				d.asleep++
			}
		}
	}
	logf("density: %d hibernated; measuring over %s", d.asleep, d.o.idle)
	d.after, d.pssAfter = measurePlane(d.procs, d.o.idle)
	tenants, _ := d.p.tenantProcesses()
	d.tenants = len(tenants)
}

// checkHeld counts the clusters reachable: an endpoint in the status, held by a listener.
func (d *densityRun) checkHeld(ctx context.Context) error {
	list, err := d.butler.ButlerV1alpha1().TenantClusters(densityNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	listening, err := listeningPorts()
	if err != nil {
		return err
	}
	d.clusters = list.Items
	for _, tc := range list.Items {
		_, port, _ := strings.Cut(tc.Status.ControlPlaneEndpoint, ":")
		if n, err := strconv.Atoi(port); err == nil && listening[n] {
			d.held++
		}
	}
	return nil
}

// wake wakes a sample spread over the clusters by a request, one at a time.
func (d *densityRun) wake(ctx context.Context) {
	for i := 0; i < d.o.wakeSample && len(d.clusters) > 0; i++ {
		tc := d.clusters[i*len(d.clusters)/d.o.wakeSample]
		took, err := wakeByRequest(ctx, d.butler, tc.Name)
		if err != nil {
			d.wakeErrors++
			logf("density: waking %s: %v", tc.Name, err)
			continue
		}
		d.wakes.add(took)
		logf("density: %s answered kubectl in %s", tc.Name, secs(took))
	}
}

// write prints the figures and writes them to <out>/density-n<N>.md (with -density-late,
// after measuring the RSS again that much later).
func (d *densityRun) write(out string) error {
	var b strings.Builder
	d.writeSummary(&b)
	d.writePlane(&b)
	if d.o.late > 0 {
		d.writeLate(&b)
	}
	table := b.String()
	fmt.Print(table)
	file := filepath.Join(out, fmt.Sprintf("density-n%d.md", d.o.n))
	if err := os.WriteFile(file, []byte(table), 0o644); err != nil {
		return err
	}
	logf("wrote %s", file)
	return nil
}

// writeSummary writes the heading and the table of the run's figures.
func (d *densityRun) writeSummary(b *strings.Builder) {
	fmt.Fprintf(b, "## Density: %d hibernated TenantClusters on one machine\n\n", d.asleep)
	how := "with no workers, created with `hibernation: {hibernated: true, wakeOnRequest: true}`: readied without starting " +
		"(its control plane first starts on the first request)"
	if d.o.ran {
		how = fmt.Sprintf("that ran once first (-density-ran): created awake with one worker and `wakeOnRequest: true`, "+
			"%d ConfigMaps of %d KiB of random bytes written into it through a minted kubeconfig once Ready, then hibernated", densityConfigMaps, densityConfigMapLen>>10)
	}
	fmt.Fprintf(b, "%d cores, %s memory; load average before %s, after %s. Each a TenantCluster of Kubernetes %s %s; "+
		"at most %d created and not yet Hibernated at any time.\n\n",
		runtime.NumCPU(), mib(memTotal()), d.loadBefore, loadavg(), d.o.version, how, d.o.awake)
	b.WriteString("| figure | value |\n|---|---|\n")
	fmt.Fprintf(b, "| TenantClusters created / Hibernated | %d / %d |\n", d.created, d.asleep)
	fmt.Fprintf(b, "| most clusters not yet Hibernated at once (with processes, seen) | %d (%d) |\n", d.maxAwake, d.maxProcs)
	fmt.Fprintf(b, "| first create -> last create | %s |\n", secs(d.lastCreate))
	fmt.Fprintf(b, "| first create -> all Hibernated | %s |\n", secs(d.allAsleep))
	fmt.Fprintf(b, "| one cluster: create -> Hibernated (median, p95) | %s, %s |\n", secs(d.toSleep.median()), secs(d.toSleep.p95()))
	fmt.Fprintf(b, "| tenant processes with all asleep | %d |\n", d.tenants)
	fmt.Fprintf(b, "| endpoints held by a listener (no connection made) | %d of %d |\n", d.held, len(d.clusters))
	fmt.Fprintf(b, "| woken by kubectl (median, max of %d; failed) | %s, %s; %d |\n", len(d.wakes.durations), secs(d.wakes.median()), secs(d.wakes.percentile(100)), d.wakeErrors)
}

// perCluster is d shared over the clusters asleep, in MiB.
func (d *densityRun) perCluster(bytes int64) string {
	return fmt.Sprintf("%.2f MiB", float64(bytes)/float64(max(d.asleep, 1))/(1<<20))
}

// writePlane writes the management plane's RSS and idle CPU before the first cluster and with
// all asleep, per process, and their PSS summed.
func (d *densityRun) writePlane(b *strings.Builder) {
	idle := d.o.idle.Seconds()
	b.WriteString("\n### The management plane before the first cluster and with all hibernated\n\n")
	fmt.Fprintf(b, "RSS, and CPU over %s with nothing asked of it, as a share of one core; per cluster = (after - before) / %d.\n\n", d.o.idle, max(d.asleep, 1))
	b.WriteString("| process | RSS before | RSS after | per cluster | CPU before | CPU after | per cluster |\n|---|---|---|---|---|---|---|\n")
	var rssB, rssA int64
	var cpuB, cpuA time.Duration
	share := func(c time.Duration) string { return fmt.Sprintf("%.2f%%", 100*c.Seconds()/idle) }
	perCPU := func(c time.Duration) string {
		return fmt.Sprintf("%.4f%%", 100*c.Seconds()/idle/float64(max(d.asleep, 1)))
	}
	for _, name := range planeProcesses {
		bf, af := d.before[name], d.after[name]
		rssB, rssA, cpuB, cpuA = rssB+bf.rss, rssA+af.rss, cpuB+bf.cpu, cpuA+af.cpu
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", name, mib(bf.rss), mib(af.rss), d.perCluster(af.rss-bf.rss),
			share(bf.cpu), share(af.cpu), perCPU(af.cpu-bf.cpu))
	}
	fmt.Fprintf(b, "| **all** | %s | %s | **%s** | %s | %s | **%s** |\n", mib(rssB), mib(rssA), d.perCluster(rssA-rssB),
		share(cpuB), share(cpuA), perCPU(cpuA-cpuB))
	// PSS, summed: each page shared by processes (the binaries of kube-apiserver and etcd every
	// tenant runs) counted once, which the RSS sum above counts once per process.
	var pssB, pssA int64
	for _, name := range planeProcesses {
		pssB, pssA = pssB+d.before[name].pss, pssA+d.after[name].pss
	}
	fmt.Fprintf(b, "\nPSS of the same processes, summed (shared pages counted once): %s before, %s after, **%s per cluster**.\n", mib(pssB), mib(pssA), d.perCluster(pssA-pssB))
}

// writeLate measures the RSS again o.late later, nothing asked of the plane: the Go runtime of
// each process gives the heap of the creates back over minutes (the scavenger, a forced
// collection every 2 min).
func (d *densityRun) writeLate(b *strings.Builder) {
	logf("density: RSS again in %s", d.o.late)
	time.Sleep(d.o.late)
	fmt.Fprintf(b, "\nRSS again %s later, nothing asked of the plane meanwhile (the woken clusters were put back to sleep):\n\n", d.o.late)
	b.WriteString("| process | RSS before | RSS later | per cluster |\n|---|---|---|---|\n")
	var beforeSum, lateSum int64
	for _, name := range planeProcesses {
		m, _ := residentMemory(d.procs[name])
		beforeSum += d.before[name].rss
		lateSum += m.rss
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, mib(d.before[name].rss), mib(m.rss), d.perCluster(m.rss-d.before[name].rss))
	}
	fmt.Fprintf(b, "| **all** | %s | %s | **%s** |\n", mib(beforeSum), mib(lateSum), d.perCluster(lateSum-beforeSum))
}

// densityCensus writes density-census-n<N>.md: the management etcd's keys and their bytes per
// resource (the value as stored: protobuf or JSON, managedFields included), and saves the live
// heap and goroutine profiles of kube-apiserver and butler-apiserver beside it.
func densityCensus(ctx context.Context, p *plane, o densityOptions, out string) error {
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", p.etcdPort)}, DialTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer etcd.Close()
	type tally struct{ keys, bytes int }
	per := map[string]*tally{}
	for key := "/registry/"; ; {
		resp, err := etcd.Get(ctx, key, clientv3.WithRange("/registry0"), clientv3.WithLimit(1000))
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			parts := strings.Split(strings.TrimPrefix(string(kv.Key), "/registry/"), "/")
			resource := parts[0]
			if strings.Contains(resource, ".") && len(parts) > 1 {
				resource += "/" + parts[1]
			}
			t := per[resource]
			if t == nil {
				t = &tally{}
				per[resource] = t
			}
			t.keys++
			t.bytes += len(kv.Value)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	names := make([]string, 0, len(per))
	for n := range per {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return per[names[i]].bytes > per[names[j]].bytes })
	var b strings.Builder
	fmt.Fprintf(&b, "## The management etcd with %d clusters asleep\n\n| resource | keys | bytes | keys per cluster | bytes per cluster |\n|---|---|---|---|---|\n", o.n)
	for _, n := range names {
		t := per[n]
		fmt.Fprintf(&b, "| %s | %d | %d | %.2f | %.0f |\n", n, t.keys, t.bytes, float64(t.keys)/float64(o.n), float64(t.bytes)/float64(o.n))
	}
	fmt.Print(b.String())
	if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("density-census-n%d.md", o.n)), []byte(b.String()), 0o644); err != nil {
		return err
	}
	for name, config := range map[string]*rest.Config{"butler-apiserver": p.direct, "kube-apiserver": p.kube} {
		c, err := httpClient(config)
		if err != nil {
			return err
		}
		// gc=1: the live heap, after a collection; and the goroutines (watches hold some each).
		for kind, query := range map[string]string{"heap": "heap?gc=1", "goroutine": "goroutine"} {
			file := filepath.Join(out, fmt.Sprintf("%s.%s-density.n%d.pprof", name, kind, o.n))
			if err := saveProfile(ctx, c, config.Host+"/debug/pprof/"+query, file); err != nil {
				return err
			}
			logf("density: wrote %s", file)
		}
	}
	return nil
}

// densityCluster is a TenantCluster with wake on request: with no workers and created
// hibernated, or (ran) with one worker and created awake, to be put to sleep by ranOnce.
func densityCluster(name, version string, ran bool) *v1alpha1.TenantCluster {
	workers, hibernated := int32(0), true
	if ran {
		workers, hibernated = 1, false
	}
	return &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: densityNamespace},
		Spec: v1alpha1.TenantClusterSpec{KubernetesVersion: version,
			ProviderConfigRef: &v1alpha1.NamespacedObjectReference{Name: "local"},
			Workers:           v1alpha1.WorkersSpec{Replicas: workers, MachineTemplate: v1alpha1.MachineTemplate{OS: v1alpha1.OSSpec{Type: v1alpha1.OSTalos}}},
			Hibernation:       &v1alpha1.HibernationSpec{Hibernated: hibernated, WakeOnRequest: true}}}
}

// ranOnce puts to sleep each cluster that is Ready with its worker: it writes densityData into
// it through a minted kubeconfig, then asks for hibernation. A cluster that fails is tried again
// on the next pass.
func (d *densityRun) ranOnce(ctx context.Context, items []v1alpha1.TenantCluster) {
	if d.filled == nil {
		d.filled = map[string]bool{}
	}
	for i := range items {
		tc := &items[i]
		if d.filled[tc.Name] || !readyWith(tc, 1) {
			continue
		}
		if err := fillCluster(ctx, d.butler, tc.Name); err != nil {
			logf("density: writing into %s: %v", tc.Name, err)
			continue
		}
		patch := []byte(`{"spec":{"hibernation":{"hibernated":true}}}`)
		if _, err := d.butler.ButlerV1alpha1().TenantClusters(densityNamespace).Patch(ctx, tc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			logf("density: hibernating %s: %v", tc.Name, err)
			continue
		}
		d.filled[tc.Name] = true
	}
}

// fillCluster writes densityData into the cluster as its admin.
func fillCluster(ctx context.Context, butler clientset.Interface, name string) error {
	req, err := butler.ButlerV1alpha1().TenantClusters(densityNamespace).CreateKubeconfig(ctx, name, &v1alpha1.KubeconfigRequest{}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(req.Status.Kubeconfig)
	if err != nil {
		return err
	}
	tenant, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	for i := range densityConfigMaps {
		raw := make([]byte, densityConfigMapLen*3/4)
		if _, err := rand.Read(raw); err != nil {
			return err
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("density-%d", i)},
			Data: map[string]string{"data": base64.StdEncoding.EncodeToString(raw)}}
		if _, err := tenant.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

func hibernatedNow(tc *v1alpha1.TenantCluster) bool {
	return tc.Status.Phase == v1alpha1.TenantClusterHibernated && meta.IsStatusConditionTrue(tc.Status.Conditions, "Hibernated") &&
		tc.Status.ObservedGeneration == tc.Generation
}

// usage is a process's RSS and the CPU it used over a window.
type usage struct {
	rss, pss int64
	cpu      time.Duration
}

// measurePlane reads each plane process's CPU time over idle, then its RSS and PSS; the PSS of
// all of them, summed, is read planeReads times over idle too (the last read at its end), for
// the spread of a memory figure taken from one run.
func measurePlane(procs map[string]int, idle time.Duration) (map[string]usage, []int64) {
	cpu := map[string]time.Duration{}
	for name, pid := range procs {
		cpu[name], _ = cpuTime(pid)
	}
	var reads []int64
	out := map[string]usage{}
	for i := range planeReads {
		time.Sleep(idle / planeReads)
		var sum int64
		for name, pid := range procs {
			m, _ := residentMemory(pid)
			sum += m.pss
			if i == planeReads-1 { // the window's end: each process's own figures
				t, _ := cpuTime(pid)
				out[name] = usage{rss: m.rss, pss: m.pss, cpu: t - cpu[name]}
			}
		}
		reads = append(reads, sum)
	}
	return out, reads
}

// planeReads is how many times measurePlane reads the plane's PSS over its window.
const planeReads = 6

// listeningPorts are the local TCP ports something listens on (/proc/net/tcp and tcp6, state 0A).
func listeningPorts() (map[int]bool, error) {
	out := map[int]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			continue
		}
		s := bufio.NewScanner(file)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) < 4 || fields[3] != "0A" {
				continue
			}
			_, hex, ok := strings.Cut(fields[1], ":")
			if !ok {
				continue
			}
			if port, err := strconv.ParseInt(hex, 16, 32); err == nil {
				out[int(port)] = true
			}
		}
		file.Close()
	}
	return out, nil
}

// wakeByRequest mints a kubeconfig for a hibernated cluster and times kubectl get ns default
// with it (the wake included); then it puts the cluster back to sleep.
func wakeByRequest(ctx context.Context, butler clientset.Interface, name string) (time.Duration, error) {
	req, err := butler.ButlerV1alpha1().TenantClusters(densityNamespace).CreateKubeconfig(ctx, name, &v1alpha1.KubeconfigRequest{}, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	f, err := os.CreateTemp("", "density-*.kubeconfig")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(req.Status.Kubeconfig); err != nil {
		return 0, err
	}
	f.Close()
	start := time.Now()
	out, err := exec.CommandContext(ctx, "kubectl", "--kubeconfig", f.Name(), "get", "ns", "default").CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("kubectl: %v: %s", err, out)
	}
	patch := []byte(`{"spec":{"hibernation":{"hibernated":true}}}`)
	_, err = butler.ButlerV1alpha1().TenantClusters(densityNamespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return d, err
}
