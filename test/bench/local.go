package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/tenantcluster"
)

// localOptions configure -local and -capacity: the local provider on the real local plane.
type localOptions struct {
	n, workers                              int // clusters created one after the other, and their workers
	capacityMax, capacityStep, capacityWork int // -capacity: up to this many clusters, this many at a time, with this many workers each
	stepTimeout, idle                       time.Duration
	minFreeMiB                              int64
	// hold keeps the -capacity clusters awake this long once all are Ready, asking each one's
	// /readyz every minute (P7); the result goes to goals (test/bench/figures/goals/P7.json).
	hold          time.Duration
	goals, commit string
}

const localNamespace = "bench-local"

var tenantClustersGVR = v1alpha1.SchemeGroupVersion.WithResource("tenantclusters")

// timelineKinds are the objects one local TenantCluster makes whose progress the timeline records,
// each watched in every namespace and kept when it is in the cluster's namespace.
var timelineKinds = []schema.GroupVersionKind{
	external.StewardControlPlaneGVK, external.TenantControlPlaneGVK, external.ClusterGVK, external.LocalClusterGVK,
	external.MachineDeploymentGVK, external.MachineSetGVK, external.MachineGVK, external.BootstrapConfigGVK, external.LocalMachineGVK,
}

// runLocal measures the local provider: o.n clusters of o.workers workers created one after the
// other (each deleted, and gone with its processes, before the next), create -> control plane
// Ready and -> Ready with every worker, and where that time goes; then how many clusters the
// machine holds Ready at once, o.capacityStep at a time, with the memory and idle CPU of their
// processes after each step.
func runLocal(ctx context.Context, p *plane, o localOptions, out string) error {
	butler, kube, dyn := p.unthrottledClients()
	if err := localProviderConfig(ctx, butler, kube, localNamespace); err != nil {
		return err
	}
	rec, err := newRecorder(ctx, dyn)
	if err != nil {
		return err
	}
	procs, err := p.processes()
	if err != nil {
		return err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Local provider on the local plane (cmd/butler-localplane), %d cores, %s memory. Load average before %s.\n\n",
		runtime.NumCPU(), mib(memTotal()), loadavg())
	if o.n > 0 {
		seq, err := sequential(ctx, butler, rec, p, o)
		if err != nil {
			return err
		}
		b.WriteString(seq)
	}
	if o.capacityMax > 0 {
		held, err := capacityAndHold(ctx, butler, p, procs, o, &b)
		if err != nil {
			return err
		}
		if held {
			logf("wrote %s", filepath.Join(o.goals, "P7.json"))
		}
	}
	fmt.Fprintf(&b, "\nLoad average after %s.\n", loadavg())
	table := b.String()
	fmt.Print(table)
	file := filepath.Join(out, fmt.Sprintf("local-n%d-w%d-cap%d.md", o.n, o.workers, o.capacityMax))
	if err := os.WriteFile(file, []byte(table), 0o644); err != nil {
		return err
	}
	logf("wrote %s", file)
	return nil
}

// localProviderConfig makes namespace ns and a ProviderConfig "local" of the local provider in
// it, and waits until it is ready.
func localProviderConfig(ctx context.Context, butler clientset.Interface, kube kubernetes.Interface, ns string) error {
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: ns},
		Spec: v1alpha1.ProviderConfigSpec{Provider: v1alpha1.ProviderLocal}}
	if _, err := butler.ButlerV1alpha1().ProviderConfigs(ns).Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := butler.ButlerV1alpha1().ProviderConfigs(ns).Get(ctx, "local", metav1.GetOptions{})
		return err == nil && got.Status.Ready, nil
	}); err != nil {
		return fmt.Errorf("the local ProviderConfig never became ready: %w", err)
	}
	return nil
}

// localCluster is test/e2e/plane's localCluster: Talos workers at v1.36.3 on the local ProviderConfig.
func localCluster(name string, workers int) *v1alpha1.TenantCluster {
	return &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: localNamespace},
		Spec: v1alpha1.TenantClusterSpec{KubernetesVersion: "v1.36.3",
			ProviderConfigRef: &v1alpha1.NamespacedObjectReference{Name: "local"},
			Workers: v1alpha1.WorkersSpec{Replicas: int32(workers),
				MachineTemplate: v1alpha1.MachineTemplate{OS: v1alpha1.OSSpec{Type: v1alpha1.OSTalos}}}}}
}

// readyWith says whether a TenantCluster is Ready with n ready workers.
func readyWith(tc *v1alpha1.TenantCluster, n int) bool {
	return tc.Status.Phase == v1alpha1.TenantClusterReady && tc.Status.ObservedState != nil &&
		tc.Status.ObservedState.Workers.Ready == int32(n) && tc.Status.ObservedGeneration == tc.Generation
}

// sequential creates o.n clusters one after the other and renders the timings and the timeline.
func sequential(ctx context.Context, butler clientset.Interface, rec *recorder, p *plane, o localOptions) (string, error) {
	cpReady, allReady, deleted := &sample{}, &sample{}, &sample{}
	var timelines []map[string]span
	for i := 1; i <= o.n; i++ {
		name := fmt.Sprintf("seq-%d", i)
		rec.reset()
		created, err := butler.ButlerV1alpha1().TenantClusters(localNamespace).Create(ctx, localCluster(name, o.workers), metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		start := time.Now()
		rec.follow(tenantcluster.TenantNamespace(created), start)
		cp := "TenantCluster ControlPlaneReady=True"
		ready := fmt.Sprintf("TenantCluster Ready with %d workers", o.workers)
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, o.stepTimeout, true, func(context.Context) (bool, error) {
			return rec.has(ready), nil
		}); err != nil {
			tc, _ := butler.ButlerV1alpha1().TenantClusters(localNamespace).Get(ctx, name, metav1.GetOptions{})
			return "", fmt.Errorf("%s was not Ready with %d workers within %s: %s", name, o.workers, o.stepTimeout, describe(tc))
		}
		tl := rec.timeline()
		cpReady.add(tl[cp].first)
		allReady.add(tl[ready].first)
		timelines = append(timelines, tl)
		logf("%s: control plane Ready after %s, Ready with %d workers after %s", name, ms(tl[cp].first), o.workers, ms(tl[ready].first))

		// Deleted, and gone with its processes, before the next.
		dstart := time.Now()
		if err := butler.ButlerV1alpha1().TenantClusters(localNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return "", err
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, o.stepTimeout, true, func(ctx context.Context) (bool, error) {
			_, err := butler.ButlerV1alpha1().TenantClusters(localNamespace).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			return "", fmt.Errorf("%s was not gone %s after its deletion: %w", name, o.stepTimeout, err)
		}
		deleted.add(time.Since(dstart))
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			procs, err := p.tenantProcesses()
			return err == nil && len(procs) == 0, nil
		}); err != nil {
			return "", fmt.Errorf("%s's processes still run a minute after it was gone", name)
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "## Create -> Ready, %d clusters one after the other\n\n"+
		"Each a TenantCluster of %d Talos workers at v1.36.3 on a local ProviderConfig, deleted (and gone with its processes) before the next. "+
		"Times from the create call's return to the first watch event that shows the state.\n\n", o.n, o.workers)
	b.WriteString("| figure | median | min | max | target |\n|---|---|---|---|---|\n")
	row := func(name string, s *sample, target string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, secs(s.median()), secs(s.percentile(0)), secs(s.percentile(100)), target)
	}
	row("create -> control plane Ready (ControlPlaneReady True)", cpReady, "")
	row(fmt.Sprintf("create -> Ready with %d Ready workers", o.workers), allReady, "15 s")
	row("delete -> TenantCluster gone", deleted, "")

	// The timeline: each step's median over the clusters, of the first and of the last object
	// of its kind to reach it.
	fmt.Fprintf(&b, "\n### Where the time goes (median over %d clusters; first / last object of the kind; s after the create returned)\n\n", o.n)
	b.WriteString("| step | first | last | objects |\n|---|---|---|---|\n")
	type step struct {
		name        string
		first, last *sample
		objects     int
	}
	steps := map[string]*step{}
	for _, tl := range timelines {
		for name, sp := range tl {
			s := steps[name]
			if s == nil {
				s = &step{name: name, first: &sample{}, last: &sample{}}
				steps[name] = s
			}
			s.first.add(sp.first)
			s.last.add(sp.last)
			s.objects = max(s.objects, sp.objects)
		}
	}
	ordered := make([]*step, 0, len(steps))
	for _, s := range steps {
		ordered = append(ordered, s)
	}
	slices.SortFunc(ordered, func(a, b *step) int {
		if c := (a.first.median() - b.first.median()); c != 0 {
			return int(c)
		}
		return strings.Compare(a.name, b.name)
	})
	for _, s := range ordered {
		note := ""
		if len(s.first.durations) < o.n {
			note = fmt.Sprintf(" (%d of %d clusters)", len(s.first.durations), o.n)
		}
		fmt.Fprintf(&b, "| %s%s | %s | %s | %d |\n", s.name, note, secs(s.first.median()), secs(s.last.median()), s.objects)
	}
	b.WriteString("\n")
	return b.String(), nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// describe is a TenantCluster's phase and conditions, for an error.
func describe(tc *v1alpha1.TenantCluster) string {
	if tc == nil {
		return "not found"
	}
	parts := []string{"phase " + string(tc.Status.Phase)}
	for _, c := range tc.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}

// capacityRow is the state after one step of -capacity.
type capacityRow struct {
	clusters, ready, processes                  int
	readyIn                                     time.Duration
	tenantsRSS, provider, apiserver, management int64
	// tenantsPSS is the PSS of every tenant process and of the tenants' datastore (the local
	// provider's etcd), summed: what the awake tenants cost, shared pages counted once.
	tenantsPSS int64
	cpu        map[string]time.Duration // over the idle window
	available  int64
}

// capacityAndHold runs capacity, then the hold (P7) when o asks for one and every cluster is
// Ready; held says whether the hold's result was saved.
func capacityAndHold(ctx context.Context, butler clientset.Interface, p *plane, procs map[string]int, o localOptions, b *strings.Builder) (held bool, err error) {
	table, all := capacity(ctx, butler, p, procs, o)
	b.WriteString(table)
	if o.hold <= 0 {
		return false, nil
	}
	if !all {
		b.WriteString("\nNot held: not every cluster was Ready.\n")
		return false, nil
	}
	g, err := hold(ctx, butler, p, procs, o)
	if err != nil {
		return false, err
	}
	g.Commit = o.commit
	b.WriteString(g.markdown())
	return true, saveJSON(filepath.Join(o.goals, "P7.json"), g)
}

// capacity creates clusters o.capacityStep at a time until o.capacityMax, a step not Ready
// within o.stepTimeout, or MemAvailable below o.minFreeMiB; after each step it reads the RSS of
// every tenant's processes and of the plane's, and their CPU over o.idle with nothing happening.
func capacity(ctx context.Context, butler clientset.Interface, p *plane, plane map[string]int, o localOptions) (table string, allReady bool) {
	var rows []capacityRow
	limit := fmt.Sprintf("reached -capacity %d", o.capacityMax)
	total := 0
	for total < o.capacityMax {
		step := min(o.capacityStep, o.capacityMax-total)
		start := time.Now()
		var err error
		for i := range step {
			name := fmt.Sprintf("cap-%03d", total+i+1)
			if _, err = butler.ButlerV1alpha1().TenantClusters(localNamespace).Create(ctx, localCluster(name, o.capacityWork), metav1.CreateOptions{}); err != nil {
				break
			}
		}
		if err != nil {
			limit = fmt.Sprintf("a create failed: %v", err)
			break
		}
		total += step
		ready := 0
		err = wait.PollUntilContextTimeout(ctx, time.Second, o.stepTimeout, true, func(ctx context.Context) (bool, error) {
			list, err := butler.ButlerV1alpha1().TenantClusters(localNamespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			ready = 0
			for i := range list.Items {
				if strings.HasPrefix(list.Items[i].Name, "cap-") && readyWith(&list.Items[i], o.capacityWork) {
					ready++
				}
			}
			return ready == total, nil
		})
		readyIn := time.Since(start)
		row := measureCapacity(p, plane, o.idle)
		row.clusters, row.ready, row.readyIn = total, ready, readyIn
		rows = append(rows, row)
		logf("capacity: %d of %d clusters Ready after %s; tenants %s, MemAvailable %s", ready, total, secs(readyIn), mib(row.tenantsRSS), mib(row.available))
		if err != nil {
			limit = fmt.Sprintf("step to %d clusters: only %d Ready after %s", total, ready, o.stepTimeout)
			break
		}
		if row.available < o.minFreeMiB<<20 {
			limit = fmt.Sprintf("MemAvailable %s below -min-free-mib %d at %d clusters", mib(row.available), o.minFreeMiB, total)
			break
		}
		if ctx.Err() != nil {
			limit = "interrupted"
			break
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "## Capacity: clusters held Ready at once\n\n"+
		"TenantClusters of %d Talos worker(s) each, %d at a time, each step waited for until every cluster is Ready with its workers (at most %s). "+
		"RSS after each step: every tenant's kube-apiserver, kube-controller-manager and kube-scheduler (processes under LOCAL_DIR/tenants), and their PSS with the tenants' datastore's (the local provider's etcd), shared pages counted once; "+
		"management = etcd + kube-apiserver + kube-controller-manager + capi-manager. Idle CPU: CPU time over %s with nothing happening, as a share of %d cores.\n\n",
		o.capacityWork, o.capacityStep, o.stepTimeout, o.idle, runtime.NumCPU())
	b.WriteString("| clusters (Ready) | step Ready in | tenant processes | tenants RSS (per cluster) | tenants and their datastore, PSS (per cluster) | butler-localprovider RSS | butler-apiserver RSS | management RSS | " +
		"idle CPU: tenants / localprovider / butler-apiserver / management / all | MemAvailable |\n|---|---|---|---|---|---|---|---|---|---|\n")
	share := func(d time.Duration) string {
		return fmt.Sprintf("%.1f%%", 100*d.Seconds()/o.idle.Seconds()/float64(runtime.NumCPU()))
	}
	for _, r := range rows {
		per, perPSS := int64(0), int64(0)
		if r.clusters > 0 {
			per, perPSS = r.tenantsRSS/int64(r.clusters), r.tenantsPSS/int64(r.clusters)
		}
		var all time.Duration
		for _, d := range r.cpu {
			all += d
		}
		fmt.Fprintf(&b, "| %d (%d) | %s | %d | %s (%s) | %s (%s) | %s | %s | %s | %s / %s / %s / %s / %s | %s |\n",
			r.clusters, r.ready, secs(r.readyIn), r.processes, mib(r.tenantsRSS), mib(per), mib(r.tenantsPSS), mib(perPSS), mib(r.provider), mib(r.apiserver), mib(r.management),
			share(r.cpu["tenants"]), share(r.cpu["butler-localprovider"]), share(r.cpu["butler-apiserver"]), share(r.cpu["management"]), share(all),
			mib(r.available))
	}
	fmt.Fprintf(&b, "\nStopped: %s.\n", limit)
	last := len(rows) - 1
	return b.String(), last >= 0 && rows[last].clusters == o.capacityMax && rows[last].ready == o.capacityMax
}

// measureCapacity reads the RSS of the tenants' processes and the plane's, and their CPU over idle.
func measureCapacity(p *plane, plane map[string]int, idle time.Duration) capacityRow {
	groups := func() map[string][]int {
		g := map[string][]int{"butler-localprovider": {plane["butler-localprovider"]}, "butler-apiserver": {plane["butler-apiserver"]}}
		for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "capi-manager"} {
			g["management"] = append(g["management"], plane[name])
		}
		tenants, _ := p.tenantProcesses()
		for _, pids := range tenants {
			g["tenants"] = append(g["tenants"], pids...)
		}
		return g
	}
	g := groups()
	cpu := func() map[string]time.Duration {
		out := map[string]time.Duration{}
		for name, pids := range g {
			out[name] = cpuOf(pids)
		}
		return out
	}
	rss := func(pids []int) int64 {
		var sum int64
		for _, pid := range pids {
			m, _ := residentMemory(pid)
			sum += m.rss
		}
		return sum
	}
	pss := func(pids ...int) int64 {
		var sum int64
		for _, pid := range pids {
			m, _ := residentMemory(pid)
			sum += m.pss
		}
		return sum
	}
	before := cpu()
	time.Sleep(idle)
	after := cpu()
	r := capacityRow{processes: len(g["tenants"]), cpu: map[string]time.Duration{},
		tenantsRSS: rss(g["tenants"]), provider: rss(g["butler-localprovider"]), apiserver: rss(g["butler-apiserver"]),
		management: rss(g["management"]), available: memAvailable(),
		tenantsPSS: pss(append(g["tenants"], plane["butler-localprovider etcd"])...)}
	for name := range g {
		r.cpu[name] = after[name] - before[name]
	}
	return r
}

// span is when the objects of one kind reached one state: the first of them and the last, and
// how many did.
type span struct {
	first, last time.Duration
	objects     int
}

// recorder keeps, for the cluster it follows, the first time each object was seen in each
// state (a condition True, a phase, a field set), from watch events.
type recorder struct {
	mu        sync.Mutex
	namespace string // the tenant's namespace; the TenantCluster itself is in localNamespace
	start     time.Time
	seen      map[string]map[string]time.Duration // step -> object UID -> first seen after start
}

func newRecorder(ctx context.Context, dyn dynamic.Interface) (*recorder, error) {
	r := &recorder{seen: map[string]map[string]time.Duration{}}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    r.observe,
		UpdateFunc: func(_, obj any) { r.observe(obj) },
	}
	var synced []cache.InformerSynced
	for _, gvk := range timelineKinds {
		gvr, err := external.GVR(gvk)
		if err != nil {
			return nil, err
		}
		inf := factory.ForResource(gvr).Informer()
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
		synced = append(synced, inf.HasSynced)
	}
	inf := factory.ForResource(tenantClustersGVR).Informer()
	if _, err := inf.AddEventHandler(handler); err != nil {
		return nil, err
	}
	synced = append(synced, inf.HasSynced)
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil, errors.New("the timeline's informers did not sync")
	}
	return r, nil
}

// reset forgets the last cluster; follow starts the clock for the cluster whose objects are in ns.
func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.namespace, r.seen = "", map[string]map[string]time.Duration{}
}

func (r *recorder) follow(ns string, start time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.namespace, r.start = ns, start
}

func (r *recorder) has(step string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen[step]) > 0
}

// timeline is every step seen so far, with its first and last object.
func (r *recorder) timeline() map[string]span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]span{}
	for step, objects := range r.seen {
		s := span{first: time.Duration(1<<63 - 1), objects: len(objects)}
		for _, d := range objects {
			s.first, s.last = min(s.first, d), max(s.last, d)
		}
		out[step] = s
	}
	return out
}

func (r *recorder) observe(obj any) {
	now := time.Now()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetDeletionTimestamp() != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.namespace == "" {
		return
	}
	if u.GetKind() == "TenantCluster" {
		if u.GetNamespace() != localNamespace || tenantcluster.TenantNamespace(&v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), UID: u.GetUID()}}) != r.namespace {
			return
		}
	} else if u.GetNamespace() != r.namespace {
		return
	}
	for _, step := range states(u) {
		step = u.GetKind() + " " + step
		if r.seen[step] == nil {
			r.seen[step] = map[string]time.Duration{}
		}
		if _, ok := r.seen[step][string(u.GetUID())]; !ok {
			r.seen[step][string(u.GetUID())] = now.Sub(r.start)
		}
	}
}

// states are the states an object is in that the timeline records: created, its phase, each
// condition that is True, each status.initialization field that is true, a Machine's nodeRef,
// replica counts, a TenantControlPlane's version status, and a TenantCluster's ready workers
// and whether it is Ready with all of them.
func states(u *unstructured.Unstructured) []string {
	out := []string{"created"}
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "" {
		out = append(out, "phase "+phase)
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		t, _ := m["type"].(string)
		if m["status"] == "True" && t != "Paused" && t != "Deleting" {
			out = append(out, t+"=True")
		}
	}
	init, _, _ := unstructured.NestedMap(u.Object, "status", "initialization")
	for k, v := range init {
		if v == true {
			out = append(out, "initialization."+k)
		}
	}
	if ref, _, _ := unstructured.NestedMap(u.Object, "status", "nodeRef"); len(ref) > 0 {
		out = append(out, "nodeRef set")
	}
	if ready, _, _ := unstructured.NestedBool(u.Object, "status", "ready"); ready {
		out = append(out, "status.ready")
	}
	for _, f := range []string{"readyReplicas", "availableReplicas"} {
		if n, _, _ := unstructured.NestedInt64(u.Object, "status", f); n > 0 {
			out = append(out, fmt.Sprintf("%s=%d", f, n))
		}
	}
	if v, _, _ := unstructured.NestedString(u.Object, "status", "kubernetesResources", "version", "status"); v != "" {
		out = append(out, "version "+v)
	}
	if u.GetKind() == "TenantCluster" {
		workers, _, _ := unstructured.NestedInt64(u.Object, "status", "observedState", "workers", "ready")
		if workers > 0 {
			out = append(out, fmt.Sprintf("workers.ready=%d", workers))
		}
		want, _, _ := unstructured.NestedInt64(u.Object, "spec", "workers", "replicas")
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		if phase == string(v1alpha1.TenantClusterReady) && workers == want && observed == u.GetGeneration() {
			out = append(out, fmt.Sprintf("Ready with %d workers", want))
		}
	}
	return out
}
