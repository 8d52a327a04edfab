package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/providerconfig/credentialstest"
)

// credentialsNamespace holds the ProviderConfig's credentials Secret.
const credentialsNamespace = "butler-system"

var (
	stewardControlPlanes = schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: "v1alpha1", Resource: "stewardcontrolplanes"}
	tenantControlPlanes  = schema.GroupVersionResource{Group: "steward.butlerlabs.dev", Version: "v1alpha1", Resource: "tenantcontrolplanes"}
)

// runLifecycle measures the TenantCluster controller: n TenantClusters (AWS, two workers, a CNI
// addon) created at once by 16 clients, until every one has all its objects written —
// namespace, Cluster, StewardControlPlane, AWSCluster and template, then, once a stand-in for
// Steward reports each control plane Ready, BootstrapConfigTemplate, MachineDeployment and
// TenantAddon — and then until all n are deleted and gone; with butler-apiserver's CPU time
// and RSS over each phase.
func runLifecycle(ctx context.Context, p *plane, n int, out string, profileSeconds int, withFloor bool) error {
	r := &lifecycleRun{p: p, n: n, out: out, profileSeconds: profileSeconds, withFloor: withFloor}
	r.butler, r.kube, r.dyn = p.unthrottledClients()
	var stopSteward func()
	var err error
	if r.ns, stopSteward, err = lifecycleSetup(ctx, p); err != nil {
		return err
	}
	defer stopSteward()
	for _, step := range []func(context.Context) error{r.measureFloor, r.prepare, r.writeAll, r.deleteAll} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	table := r.table()
	fmt.Print(table)
	return os.WriteFile(filepath.Join(out, fmt.Sprintf("lifecycle-n%d.md", n)), []byte(table), 0o644)
}

// lifecycleRun is one -lifecycle run: its plane and clients, and what its phases measured.
type lifecycleRun struct {
	p                 *plane
	n                 int
	out               string
	profileSeconds    int
	withFloor         bool
	butler            clientset.Interface
	kube              kubernetes.Interface
	dyn               dynamic.Interface
	ns                string
	fl                floor
	steps             *eventTimes
	butlerPID         int
	procs             map[string]int
	start             time.Time
	created, written  time.Duration
	writtenAt         map[string]time.Time
	timeline          string
	butlersGone, gone time.Duration
	namespacesGone    time.Duration
	// before the creates, once every cluster is written, once every cluster is gone.
	before, afterWriting, afterDeleting lifecycleMark
}

// lifecycleMark is what a phase's end reads: butler-apiserver's CPU and RSS, the CPU of the
// plane's processes and the machine, butler's requests, kube-apiserver's by flow schema, and
// butler's Events written.
type lifecycleMark struct {
	cpu, busy time.Duration
	mem       memory
	plane     processCPU
	req       clientRequests
	flows     flowRequests
	events    eventCounts
}

// measureFloor measures, with -lifecycle-floor and first, on the same plane, the same objects written
// and deleted without butler.
func (r *lifecycleRun) measureFloor(ctx context.Context) error {
	if !r.withFloor {
		return nil
	}
	logf("the floor: %d clusters' objects straight to kube-apiserver", r.n)
	var err error
	tmpl := func(i int64) *v1alpha1.TenantCluster { return benchCluster(r.ns, i) }
	if r.fl, err = runFloor(ctx, r.butler, r.kube, r.dyn, r.ns, r.n, lifecycleClients, tmpl); err != nil {
		return err
	}
	logf("the floor: written in %s, gone in %s (namespaces %s)", r.fl.written.Round(time.Millisecond), r.fl.gone.Round(time.Millisecond), r.fl.namespacesGone.Round(time.Millisecond))
	return nil
}

// prepare follows butler's Events and reads the figures before the first create.
func (r *lifecycleRun) prepare(ctx context.Context) error {
	var err error
	if r.steps, err = followEvents(ctx, r.kube, r.ns); err != nil {
		return err
	}
	if r.butlerPID, err = r.p.pid("butler-apiserver"); err != nil {
		return err
	}
	if r.procs, err = r.p.processes(); err != nil {
		return err
	}
	m := &r.before
	m.cpu, _ = cpuTime(r.butlerPID)
	m.mem, _ = residentMemory(r.butlerPID)
	m.plane, m.busy = planeCPU(r.procs), machineBusy()
	if m.req, err = r.p.scrapeClientRequests(ctx); err != nil {
		return err
	}
	if m.flows, err = r.p.scrapeFlows(ctx); err != nil {
		return err
	}
	m.events = r.steps.writes()
	return nil
}

// writeAll creates the n clusters at once and waits until every one has all its objects
// written (with -profile-seconds, CPU profiles of both servers over the first seconds).
func (r *lifecycleRun) writeAll(ctx context.Context) error {
	r.start = time.Now()
	profiled := func() error { return nil }
	if r.profileSeconds > 0 {
		profiled = profileServers(ctx, r.p, options{out: r.out, n: r.n, profileSeconds: r.profileSeconds}, "lifecycle")
	}
	if err := inParallel(r.n, lifecycleClients, func(i int) error {
		_, err := r.butler.ButlerV1alpha1().TenantClusters(r.ns).Create(ctx, benchCluster(r.ns, int64(i+1)), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	r.created = time.Since(r.start)
	written := func(tc *v1alpha1.TenantCluster) bool {
		c := meta.FindStatusCondition(tc.Status.Conditions, "WorkersReady")
		return c != nil && c.Reason == "WorkersNotReady" && len(tc.Status.ObservedState.Addons) == 1
	}
	var err error
	if r.writtenAt, err = waitAll(ctx, r.butler, r.ns, r.n, 20*time.Minute, written); err != nil {
		return err
	}
	r.written = time.Since(r.start)
	if err := profiled(); err != nil {
		return err
	}
	m := &r.afterWriting
	m.plane, m.busy = planeCPU(r.procs), machineBusy()
	m.cpu, _ = cpuTime(r.butlerPID)
	m.mem, _ = residentMemory(r.butlerPID)
	if m.req, err = r.p.scrapeClientRequests(ctx); err != nil {
		return err
	}
	if m.flows, err = r.p.scrapeFlows(ctx); err != nil {
		return err
	}
	r.timeline = r.steps.since(r.start)
	m.events = r.steps.writes()
	return nil
}

// deleteAll deletes every cluster and waits until all are gone.
func (r *lifecycleRun) deleteAll(ctx context.Context) error {
	dstart := time.Now()
	if err := r.butler.ButlerV1alpha1().TenantClusters(r.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	if err := r.waitGone(ctx, dstart); err != nil {
		return fmt.Errorf("the clusters were not all gone: %w", err)
	}
	r.gone = time.Since(dstart)
	m := &r.afterDeleting
	m.flows, _ = r.p.scrapeFlows(ctx)
	var err error
	if m.req, err = r.p.scrapeClientRequests(ctx); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // the last Events of the deletion reach the watch
	m.events = r.steps.writes()
	m.cpu, _ = cpuTime(r.butlerPID)
	m.plane, m.busy = planeCPU(r.procs), machineBusy()
	return nil
}

// waitGone waits until every TenantCluster is gone. What butler deletes itself (the
// TenantAddons, the Cluster API and Steward objects, each namespace's deletion) is gone before
// kube-controller-manager's namespace controller has emptied and removed the namespaces, which
// the TenantClusters' finalizers wait for: both times are taken on the way.
func (r *lifecycleRun) waitGone(ctx context.Context, dstart time.Time) error {
	ours := metav1.ListOptions{LabelSelector: external.TenantClusterNamespaceLabel + "=" + r.ns}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 20*time.Minute, true, func(ctx context.Context) (bool, error) {
		if r.butlersGone == 0 {
			left, err := butlerObjectsLeft(ctx, r.butler, r.dyn, r.ns)
			if err != nil || left > 0 {
				return false, nil
			}
			r.butlersGone = time.Since(dstart)
		}
		if r.namespacesGone == 0 {
			list, err := r.kube.CoreV1().Namespaces().List(ctx, ours)
			if err != nil || len(list.Items) > 0 {
				return false, nil
			}
			r.namespacesGone = time.Since(dstart)
		}
		list, err := r.butler.ButlerV1alpha1().TenantClusters(r.ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
}

// table is the run's figures, the floor's beside them, and the timeline of the clusters' Events.
func (r *lifecycleRun) table() string {
	n := r.n
	var firstWritten sample
	for _, at := range r.writtenAt {
		firstWritten.add(at.Sub(r.start))
	}
	b0, b1, b2 := r.before, r.afterWriting, r.afterDeleting
	sent, sentDeleting := b1.req.sub(b0.req), b2.req.sub(b1.req)
	table := fmt.Sprintf(`| figure (%d TenantClusters, AWS provider, Steward played by the bench) | value |
|---|---|
| created (16 clients) | %s |
| created -> every cluster's objects written (namespace, Cluster, StewardControlPlane, AWSCluster, templates, MachineDeployment, TenantAddon) | %s (%.1f ms per cluster) |
| each cluster written, after the first create: median / p90 / last | %s / %s / %s |
| butler-apiserver CPU while writing them | %s (%.1f ms per cluster) |
| CPU while writing them: the plane's processes / the whole machine | %s / %s |
| butler-apiserver RSS before / after | %s / %s |
| butler-apiserver's requests while writing them, per cluster: writes (POST, PUT, PATCH, DELETE) / reads | %.1f (%s) / %.1f |
| of them, applies of external objects (Cluster API, Steward, provider kinds) per cluster: sent / changed nothing | %.1f / %.1f |
| time butler-apiserver's requests waited in the client-side rate limiter (summed) | %.1f s |
| kube-apiserver's requests while writing them, by flow schema (butler's ServiceAccount is service-accounts): requests, seconds executing | %s |
| delete all -> every TenantAddon, Cluster API and Steward object gone, every namespace deleting | %s |
| delete all -> the namespaces removed (kube-controller-manager's namespace controller) | %s |
| delete all -> every TenantCluster gone (its finalizer waits for its namespace) | %s |
| butler-apiserver CPU while deleting | %s |
| butler-apiserver's requests while deleting, per cluster: writes / reads | %.1f (%s) / %.1f |
| CPU while deleting: the plane's processes / the whole machine | %s / %s |
| kube-apiserver's requests while deleting, by flow schema | %s |
`, n, r.created.Round(time.Millisecond), r.written.Round(time.Millisecond), float64(r.written.Milliseconds())/float64(n),
		secs(firstWritten.median()), secs(firstWritten.percentile(90)), secs(firstWritten.percentile(100)),
		(b1.cpu - b0.cpu).Round(time.Millisecond), float64((b1.cpu-b0.cpu).Milliseconds())/float64(n),
		b1.plane.sub(b0.plane), (b1.busy - b0.busy).Round(100*time.Millisecond),
		mib(b0.mem.rss), mib(b1.mem.rss),
		sent.total(sent.writes)/float64(n), sent.byHost(n), sent.total(sent.reads)/float64(n), sent.applies/float64(n), sent.unchanged/float64(n), sent.throttled, b1.flows.sub(b0.flows),
		r.butlersGone.Round(time.Millisecond), r.namespacesGone.Round(time.Millisecond), r.gone.Round(time.Millisecond), (b2.cpu - b1.cpu).Round(time.Millisecond),
		sentDeleting.total(sentDeleting.writes)/float64(n), sentDeleting.byHost(n), sentDeleting.total(sentDeleting.reads)/float64(n),
		b2.plane.sub(b1.plane), (b2.busy - b1.busy).Round(100*time.Millisecond), b2.flows.sub(b1.flows))
	table += fmt.Sprintf("| butler's Events per cluster while writing: created / updated (series), by what they regard | %s |\n", b1.events.sub(b0.events, n))
	table += fmt.Sprintf("| butler's Events per cluster while deleting: created / updated (series) | %s |\n", b2.events.sub(b1.events, n))
	if r.withFloor {
		table += r.floorRows()
	}
	return table + "\nWhen the clusters' Events were first seen, after the first create (median / p90 / last, and how many clusters had one):\n\n" + r.timeline
}

// floorRows are the floor's figures and butler's against them.
func (r *lifecycleRun) floorRows() string {
	fl := r.fl
	return fmt.Sprintf(`| the floor: the same objects server-side applied straight to kube-apiserver by %d clients in the workers' order, and the access step's requests to each tenant (%d requests per cluster), Cluster API, butler and the Steward stand-in running; run first, on the same plane, its clock stopped when its writes return (make bench-report ONLY=P9 compares on fresh planes, both clocks on one watch) | %s |
| the floor: delete the same objects -> all gone / their namespaces removed | %s / %s |
| butler / the floor: written | %.2f |
| butler / the floor: every TenantCluster gone / the namespaces removed | %.2f |
`, lifecycleClients, fl.applies, fl.written.Round(time.Millisecond), fl.gone.Round(time.Millisecond), fl.namespacesGone.Round(time.Millisecond),
		r.written.Seconds()/fl.written.Seconds(), r.gone.Seconds()/fl.namespacesGone.Seconds())
}

// lifecycleNamespace holds the bench's TenantClusters and their ProviderConfig.
const lifecycleNamespace = "bench-lifecycle"

// lifecycleSetup readies plane p for the lifecycle's clusters: their namespace, an AWS
// ProviderConfig that is Ready, the one real tenant, and the Steward stand-in (stop ends it).
func lifecycleSetup(ctx context.Context, p *plane) (ns string, stop func(), err error) {
	ns = lifecycleNamespace
	butler, kube, dyn := p.unthrottledClients()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return "", nil, err
	}
	// Credentials of CAPA's shape and the identity the AWSCluster names: ProviderConfig
	// readiness checks both. The Secret is in butler-system: butler reads Secrets only there
	// and in the tenant namespaces it made.
	creds, _, _ := credentialstest.Data("aws")
	if _, err := kube.CoreV1().Secrets(credentialsNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bench-aws"},
		StringData: creds}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", nil, err
	}
	identity := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSClusterStaticIdentity",
		"metadata": map[string]any{"name": "bench-aws"}, "spec": map[string]any{"secretRef": "bench-aws"}}}
	awsIdentities := schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Resource: "awsclusterstaticidentities"}
	if _, err := dyn.Resource(awsIdentities).Create(ctx, identity, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", nil, err
	}
	pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: ns},
		Spec: v1alpha1.ProviderConfigSpec{Provider: v1alpha1.ProviderAWS,
			CredentialsRef: &v1alpha1.SecretKeyReference{Name: "bench-aws", Namespace: credentialsNamespace},
			AWS:            &v1alpha1.AWSConfig{Region: "eu-west-1"}}}
	if _, err := butler.ButlerV1alpha1().ProviderConfigs(ns).Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		return "", nil, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := butler.ButlerV1alpha1().ProviderConfigs(ns).Get(ctx, "aws", metav1.GetOptions{})
		return err == nil && got.Status.Ready, nil
	}); err != nil {
		return "", nil, fmt.Errorf("the ProviderConfig never became ready: %w", err)
	}
	tenant, err := benchTenant(ctx, butler, kube)
	if err != nil {
		return "", nil, err
	}
	return ns, playSteward(ctx, kube, dyn, tenant), nil
}

// lifecycleClients create the TenantClusters at once (and write the floor's objects).
const lifecycleClients = 16

// benchCluster is the i-th TenantCluster of the bench: AWS, two workers, a CNI addon.
func benchCluster(ns string, i int64) *v1alpha1.TenantCluster {
	return &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tc-%04d", i), Namespace: ns},
		Spec: v1alpha1.TenantClusterSpec{KubernetesVersion: "v1.36.3",
			ProviderConfigRef: &v1alpha1.NamespacedObjectReference{Name: "aws"},
			Workers:           v1alpha1.WorkersSpec{Replicas: 2},
			Addons:            v1alpha1.AddonsSpec{CNI: &v1alpha1.CNIAddon{Provider: "cilium"}}}}
}

// waitAll waits until n clusters of ns are ok, and says when each was first seen so (polled
// every 250 ms).
func waitAll(ctx context.Context, butler clientset.Interface, ns string, n int, timeout time.Duration, ok func(*v1alpha1.TenantCluster) bool) (map[string]time.Time, error) {
	var done int
	seen := map[string]time.Time{}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := butler.ButlerV1alpha1().TenantClusters(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		done = 0
		for i := range list.Items {
			if ok(&list.Items[i]) {
				done++
				if _, was := seen[list.Items[i].Name]; !was {
					seen[list.Items[i].Name] = time.Now()
				}
			}
		}
		return done == n, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%d of %d clusters reached the state: %w", done, n, err)
	}
	return seen, nil
}

// eventTimes are when the TenantClusters' Events of each reason were first seen, per cluster.
type eventTimes struct {
	mu    sync.Mutex
	first map[string]map[string]time.Time // reason -> cluster -> time
	// written counts the Events seen, by the kind they regard: created, and updated (a
	// series: the recorder folds a repeat into the Event it made).
	written map[string]eventWrites
}

type eventWrites struct{ created, updated int }

// eventCounts are eventTimes.written at one moment.
type eventCounts map[string]eventWrites

func (e *eventTimes) writes() eventCounts {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := eventCounts{}
	for k, v := range e.written {
		out[k] = v
	}
	return out
}

// sub renders c minus an earlier reading, per cluster of n, by kind.
func (c eventCounts) sub(before eventCounts, n int) string {
	var parts []string
	var created, updated int
	for kind, v := range c {
		d := eventWrites{v.created - before[kind].created, v.updated - before[kind].updated}
		created += d.created
		updated += d.updated
		parts = append(parts, fmt.Sprintf("%s %.2f / %.2f", kind, float64(d.created)/float64(n), float64(d.updated)/float64(n)))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%.2f / %.2f (%s)", float64(created)/float64(n), float64(updated)/float64(n), strings.Join(parts, ", "))
}

// followEvents watches the Events of namespace ns (those of its TenantClusters): each is a step
// of a cluster moving (ControlPlaneWaiting, ControlPlaneReady, ...).
func followEvents(ctx context.Context, kube kubernetes.Interface, ns string) (*eventTimes, error) {
	w, err := kube.EventsV1().Events(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	e := &eventTimes{first: map[string]map[string]time.Time{}, written: map[string]eventWrites{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			got, ok := ev.Object.(*eventsv1.Event)
			if !ok {
				continue
			}
			e.mu.Lock()
			c := e.written[got.Regarding.Kind]
			switch ev.Type {
			case watch.Added:
				c.created++
			case watch.Modified:
				c.updated++
			}
			e.written[got.Regarding.Kind] = c
			if got.Regarding.Kind != "TenantCluster" {
				e.mu.Unlock()
				continue
			}
			byCluster := e.first[got.Reason]
			if byCluster == nil {
				byCluster = map[string]time.Time{}
				e.first[got.Reason] = byCluster
			}
			if _, seen := byCluster[got.Regarding.Name]; !seen {
				byCluster[got.Regarding.Name] = time.Now()
			}
			e.mu.Unlock()
		}
	}()
	return e, nil
}

// since renders each reason's times after start, the earliest median first.
func (e *eventTimes) since(start time.Time) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	type row struct {
		reason string
		s      sample
	}
	var rows []row
	for reason, byCluster := range e.first {
		r := row{reason: reason}
		for _, at := range byCluster {
			r.s.add(at.Sub(start))
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].s.median() < rows[j].s.median() })
	var b strings.Builder
	b.WriteString("| Event reason | median | p90 | last | clusters |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d |\n", r.reason, secs(r.s.median()), secs(r.s.percentile(90)), secs(r.s.percentile(100)), len(r.s.durations))
	}
	return b.String()
}

// processCPU is the CPU time of each of the plane's processes.
type processCPU map[string]time.Duration

func planeCPU(procs map[string]int) processCPU {
	out := processCPU{}
	for name, pid := range procs {
		out[name], _ = cpuTime(pid)
	}
	return out
}

// sub says c minus an earlier reading, process by process, the busiest first.
func (c processCPU) sub(before processCPU) string {
	type one struct {
		name string
		cpu  time.Duration
	}
	var all []one
	var total time.Duration
	for name, t := range c {
		all = append(all, one{name, t - before[name]})
		total += t - before[name]
	}
	sort.Slice(all, func(i, j int) bool { return all[i].cpu > all[j].cpu })
	parts := []string{total.Round(100 * time.Millisecond).String()}
	for _, o := range all {
		parts = append(parts, fmt.Sprintf("%s %s", o.name, o.cpu.Round(100*time.Millisecond)))
	}
	return parts[0] + " (" + strings.Join(parts[1:], ", ") + ")"
}

// machineBusy is the CPU time every process of the machine has used (user, nice, system, irq,
// softirq in /proc/stat), to tell whether something besides the plane ran.
func machineBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	var ticks int64
	for i, f := range fields {
		if i == 0 || i == 4 || i == 5 || i > 7 { // "cpu", idle, iowait, steal and guests
			continue
		}
		v, _ := strconv.ParseInt(f, 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// butlerObjectsLeft counts what the controllers made for the clusters of namespace ns that is still
// there: TenantAddons, and the Cluster API, Steward and AWS objects in the tenant namespaces.
func butlerObjectsLeft(ctx context.Context, butler clientset.Interface, dyn dynamic.Interface, ns string) (int, error) {
	addons, err := butler.ButlerV1alpha1().TenantAddons(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	left := len(addons.Items)
	ours := metav1.ListOptions{LabelSelector: external.TenantClusterNamespaceLabel + "=" + ns}
	for _, gvk := range []schema.GroupVersionKind{external.ClusterGVK, external.StewardControlPlaneGVK,
		external.MachineDeploymentGVK, external.AWSClusterGVK} {
		list, err := dyn.Resource(external.MustGVR(gvk)).List(ctx, ours)
		if err != nil {
			return 0, err
		}
		left += len(list.Items)
	}
	return left, nil
}

// benchTenant makes the one tenant cluster whose admin kubeconfig the Steward stand-in hands to
// every TenantControlPlane: a real one of the local provider (its own kube-apiserver and
// kube-controller-manager), without workers, made before the clock starts. A tenant is a small
// cluster of its own. Handing out the management cluster's kubeconfig instead, as the stand-in
// once did, made each cluster's work in its tenant grow with the fleet: the Team access step
// binds a role in every namespace of the tenant, so N clusters wrote N x N RoleBindings through
// tenant clients paced at client-go's 5/s, and at N=200 the TenantCluster reconcilers spent
// minutes each there while the other clusters waited in the queue.
func benchTenant(ctx context.Context, butler clientset.Interface, kube kubernetes.Interface) (map[string][]byte, error) {
	if err := localProviderConfig(ctx, butler, kube, localNamespace); err != nil {
		return nil, err
	}
	tc, err := butler.ButlerV1alpha1().TenantClusters(localNamespace).Create(ctx, localCluster("tenant", 0), metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	// Ready, not only its control plane: then its kube-controller-manager has filled in the
	// aggregated ClusterRoles view and edit, which each cluster's access step waits for.
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		tc, err = butler.ButlerV1alpha1().TenantClusters(localNamespace).Get(ctx, "tenant", metav1.GetOptions{})
		return err == nil && readyWith(tc, 0), nil
	}); err != nil {
		return nil, fmt.Errorf("the bench's tenant never became Ready: %w", err)
	}
	secret, err := kube.CoreV1().Secrets(tc.Status.TenantNamespace).Get(ctx, tc.Name+"-admin-kubeconfig", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("the bench's tenant: %w", err)
	}
	return secret.Data, nil
}

// playSteward stands in for Steward: for every StewardControlPlane it makes the TenantControlPlane
// of the same name Ready, with the admin kubeconfig Secret (data: that of one real tenant, the
// same for all).
func playSteward(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, admin map[string][]byte) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	inf := factory.ForResource(stewardControlPlanes).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		scp := obj.(*unstructured.Unstructured)
		go func() {
			ns, name := scp.GetNamespace(), scp.GetName()
			version, _, _ := unstructured.NestedString(scp.Object, "spec", "version")
			tcp := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "steward.butlerlabs.dev/v1alpha1", "kind": "TenantControlPlane",
				"metadata": map[string]any{"name": name, "namespace": ns},
				"spec": map[string]any{
					"controlPlane": map[string]any{"deployment": map[string]any{"replicas": int64(1)}, "service": map[string]any{"serviceType": "LoadBalancer"}},
					"kubernetes":   map[string]any{"version": version, "kubelet": map[string]any{"cgroupfs": "systemd"}},
					// Steward always writes it; the CRD's transition rules read it on every update.
					"networkProfile": map[string]any{},
				}}}
			created, err := dyn.Resource(tenantControlPlanes).Namespace(ns).Create(ctx, tcp, metav1.CreateOptions{})
			if err != nil {
				if !apierrors.IsAlreadyExists(err) {
					logf("steward stand-in: %v", err)
				}
				return
			}
			_ = unstructured.SetNestedField(created.Object, map[string]any{
				"controlPlaneEndpoint": "127.0.0.1:6443",
				"kubernetesResources":  map[string]any{"version": map[string]any{"version": version, "status": "Ready"}},
			}, "status")
			if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-admin-kubeconfig"},
				Data: admin}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				logf("steward stand-in: %v", err)
			}
			if _, err := dyn.Resource(tenantControlPlanes).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				logf("steward stand-in: %v", err)
			}
		}()
	}})
	factory.Start(ctx.Done())
	return cancel
}
