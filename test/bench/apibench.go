package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// apiBench is the default run (P1, P2, P2b, P5) on one plane: the two sides, the clients that
// speak to them, and the report its steps fill in.
type apiBench struct {
	o          options
	p          *plane
	agg, crd   side
	directBase string
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	// clients create and update; lister lists through kube-apiserver, direct straight to
	// butler-apiserver's port.
	clients        []*http.Client
	lister, direct *http.Client
	etcd           *clientv3.Client
	// butlerPID and kubePID are sampled for memory; cpu reads each server's CPU time.
	butlerPID, kubePID int
	cpu                func() map[string]time.Duration
	// all are every key of a side; timed those created while the clock runs.
	all, timed []key
	r          report
}

// runAPI measures P1, P2, P2b and P5 on p, as named steps, and writes the table to o.out.
func runAPI(ctx context.Context, p *plane, o options, loadBefore string) error {
	b, err := newAPIBench(p, o)
	if err != nil {
		return err
	}
	defer b.etcd.Close()
	b.r.loadBefore = loadBefore
	for _, step := range []func(context.Context) error{
		b.prepare, b.create, b.checkLoaded, b.list, b.watch, b.protobuf,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return b.write()
}

// newAPIBench makes the clients of both sides, etcd's and the servers' process ids.
func newAPIBench(p *plane, o options) (*apiBench, error) {
	b := &apiBench{o: o, p: p, kube: kubernetes.NewForConfigOrDie(p.kube), dyn: dynamic.NewForConfigOrDie(p.kube)}
	b.agg, b.crd = p.sides()
	b.directBase = p.direct.Host + "/apis/butler.butlerlabs.dev/v1alpha1/tenantclusters"
	var err error
	for range o.clients {
		c, err := httpClient(p.kube)
		if err != nil {
			return nil, err
		}
		b.clients = append(b.clients, c)
	}
	if b.lister, err = httpClient(p.kube); err != nil {
		return nil, err
	}
	if b.direct, err = httpClient(p.direct); err != nil {
		return nil, err
	}
	// Closed by runAPI, unless a step here fails (then the command ends).
	b.etcd, err = clientv3.New(clientv3.Config{Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", p.etcdPort)}, DialTimeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	pids := map[string]int{}
	for _, name := range []string{"butler-apiserver", "kube-apiserver", "etcd"} {
		if pids[name], err = p.pid(name); err != nil {
			return nil, err
		}
	}
	b.butlerPID, b.kubePID = pids["butler-apiserver"], pids["kube-apiserver"]
	b.cpu = func() map[string]time.Duration {
		out := map[string]time.Duration{}
		for name, pid := range pids {
			out[name], _ = cpuTime(pid)
		}
		return out
	}
	return b, nil
}

// prepare installs the CRD copy and the namespaces (Teams' with -teams) with each namespace's
// first object, warms both sides once (the CRD's first requests build its handler), then
// samples RSS.
func (b *apiBench) prepare(ctx context.Context) error {
	limit := func(int) int { return b.o.n }
	var err error
	b.all, b.timed, err = prepareSides(ctx, b.dyn, b.kube, b.lister, b.o.crds, b.o.n, b.o.namespaces, b.agg, b.crd, b.o.teams, limit)
	if err != nil {
		return err
	}
	for _, s := range []side{b.agg, b.crd} {
		if _, err := get(ctx, b.lister, s.collection(""), contentJSON); err != nil {
			return err
		}
	}
	time.Sleep(2 * time.Second)
	b.r.rssBefore, err = sampleMemory(b.butlerPID, b.kubePID)
	return err
}

// create is P2: the creates, in batches alternating sides; then the quotas' count (-teams),
// RSS loaded and, with -profile-seconds, the servers' live heaps.
func (b *apiBench) create(ctx context.Context) error {
	logf("P2: creating %d TenantClusters on each side with %d clients", b.o.n, b.o.clients)
	var profiles func() error
	if b.o.profileSeconds > 0 {
		profiles = profileServers(ctx, b.p, b.o, "p2-create")
	}
	runs := []sideRun{{name: b.agg.name, side: b.agg, wire: wireJSON}, {name: b.crd.name, side: b.crd, wire: wireJSON}}
	var err error
	if b.r.createTime, b.r.createCPU, err = createBatches(ctx, runs, b.clients, b.timed, b.o.batches, b.cpu); err != nil {
		return err
	}
	b.r.created = len(b.timed)
	if profiles != nil {
		if err := profiles(); err != nil {
			return err
		}
	}
	if b.o.teams {
		if err := b.checkQuotas(ctx); err != nil {
			return err
		}
	}
	time.Sleep(2 * time.Second)
	if b.r.rssLoaded, err = sampleMemory(b.butlerPID, b.kubePID); err != nil {
		return err
	}
	if b.o.profileSeconds > 0 {
		return b.saveHeaps(ctx)
	}
	return nil
}

// checkQuotas checks that the CRD side's ResourceQuotas really counted every create.
func (b *apiBench) checkQuotas(ctx context.Context) error {
	var used int64
	for i := range b.o.namespaces {
		q, err := b.kube.CoreV1().ResourceQuotas(fmt.Sprintf("bench-%02d", i)).Get(ctx, "bench", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, v := range q.Status.Used {
			used += v.Value()
		}
	}
	if used != int64(b.o.n) {
		return fmt.Errorf("the CRD side's ResourceQuotas count %d TenantClusters, want %d", used, b.o.n)
	}
	return nil
}

// saveHeaps saves both servers' live heaps (gc=1: after a collection) once N are loaded.
func (b *apiBench) saveHeaps(ctx context.Context) error {
	for name, t := range map[string]struct {
		c    *http.Client
		host string
	}{"butler-apiserver": {b.direct, b.p.direct.Host}, "kube-apiserver": {b.lister, b.p.kube.Host}} {
		file := filepath.Join(b.o.out, fmt.Sprintf("%s.heap-loaded.n%d.pprof", name, b.o.n))
		if err := saveProfile(ctx, t.c, t.host+"/debug/pprof/heap?gc=1", file); err != nil {
			return err
		}
	}
	return nil
}

// checkLoaded checks that every path sees all N objects before anything is timed, and finds
// where each side keeps its tenantclusters in etcd.
func (b *apiBench) checkLoaded(ctx context.Context) error {
	for name, url := range map[string]string{"aggregated": b.agg.collection(""), "CRD": b.crd.collection(""), "direct": b.directBase} {
		c := b.lister
		if name == "direct" {
			c = b.direct
		}
		if err := expectItems(ctx, c, url, b.o.n); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for _, s := range []*side{&b.agg, &b.crd} {
		var err error
		if s.etcdPrefix, err = tenantClustersPrefix(ctx, b.etcd, s.etcdPrefix); err != nil {
			return err
		}
	}
	return nil
}

// list is P1 and its floor, then RSS, then (with -profile-seconds) each List profiled.
func (b *apiBench) list(ctx context.Context) error {
	logf("P1: %d List rounds (+%d warm-up)", b.o.rounds, b.o.warmup)
	agg, crd := b.agg.collection(""), b.crd.collection("")
	variants := []listVariant{
		{"agg-json", httpList(b.lister, agg, contentJSON)},
		{"crd-json", httpList(b.lister, crd, contentJSON)},
		{"agg-protobuf", httpList(b.lister, agg, contentProtobuf)},
		{"agg-table", httpList(b.lister, agg, contentTable)},
		{"crd-table", httpList(b.lister, crd, contentTable)},
		{"direct-json", httpList(b.direct, b.directBase, contentJSON)},
		{"direct-protobuf", httpList(b.direct, b.directBase, contentProtobuf)},
		{"etcd-agg", etcdRange(b.etcd, b.agg.etcdPrefix, b.o.n)},
		{"etcd-crd", etcdRange(b.etcd, b.crd.etcdPrefix, b.o.n)},
	}
	var err error
	if b.r.lists, err = listRounds(ctx, variants, b.o.warmup, b.o.rounds); err != nil {
		return err
	}
	if b.r.rssListed, err = sampleMemory(b.butlerPID, b.kubePID); err != nil {
		return err
	}
	if b.o.profileSeconds > 0 {
		return profile(ctx, b.p, b.o, variants)
	}
	return nil
}

// watch is P2b: watch rounds alternating sides, (with -profile-seconds) profiled, then RSS.
func (b *apiBench) watch(ctx context.Context) error {
	logf("P2b: %d rounds of %d updates per side", b.o.watchRounds, b.o.updates)
	runs := []sideRun{{name: b.crd.name, side: b.crd, wire: wireJSON}, {name: b.agg.name, side: b.agg, wire: wireJSON}}
	var err error
	if b.r.watches, err = runWatchRounds(ctx, runs, b.o.watchRounds, "r", b.lister, b.clients, b.all[:b.o.updates]); err != nil {
		return err
	}
	if b.o.profileSeconds > 0 {
		if err := profileWatch(ctx, b.p, b.o, []side{b.agg, b.crd}, b.lister, b.clients, b.all[:b.o.updates]); err != nil {
			return err
		}
	}
	b.r.rssEnd, err = sampleMemory(b.butlerPID, b.kubePID)
	return err
}

// protobuf is P2 and P2b again with the aggregated side spoken to in protobuf, as a generated
// clientset can ask (CRDs cannot: their side stays JSON), after everything above so the JSON
// figures are measured exactly as before: P2b's rounds, then creates of further objects.
func (b *apiBench) protobuf(ctx context.Context) error {
	if b.o.protobufN == 0 {
		return nil
	}
	pb := &b.r.protobuf
	aggPB := sideRun{name: b.agg.name + " protobuf", side: b.agg, wire: wireProtobuf}
	// The aggregated side in JSON again, on objects of its own: what the later phase itself
	// costs (fuller stores), apart from what protobuf changes.
	aggJSON := sideRun{name: b.agg.name + " JSON", side: b.agg, wire: wireJSON, nameSuffix: "-json"}
	crdJSON := sideRun{name: b.crd.name, side: b.crd, wire: wireJSON}
	logf("P2b protobuf: %d rounds of %d updates per side", b.o.watchRounds, b.o.updates)
	var err error
	if pb.watches, err = runWatchRounds(ctx, []sideRun{crdJSON, aggPB}, b.o.watchRounds, "pb", b.lister, b.clients, b.all[:b.o.updates]); err != nil {
		return err
	}
	m := b.o.protobufN
	if m < 0 {
		m = b.o.n / 2
	}
	logf("P2 protobuf: creating %d more TenantClusters on each side", m)
	var profiles func() error
	if b.o.profileSeconds > 0 {
		profiles = profileServers(ctx, b.p, b.o, "p2-create-protobuf")
	}
	more := keys(b.o.n+m, b.o.namespaces)[b.o.n:]
	logf("P2 protobuf: and %d more on the aggregated side in JSON", m)
	if pb.createTime, pb.createCPU, err = createBatches(ctx, []sideRun{aggPB, crdJSON, aggJSON}, b.clients, more, b.o.batches, b.cpu); err != nil {
		return err
	}
	pb.created, pb.aggName, pb.aggJSONName = m, aggPB.name, aggJSON.name
	if profiles != nil {
		return profiles()
	}
	return nil
}

// write prints the table and writes it to <out>/bench-n<N>.md.
func (b *apiBench) write() error {
	b.r.o, b.r.loadAfter = b.o, loadavg()
	table := b.r.String()
	fmt.Print(table)
	file := filepath.Join(b.o.out, fmt.Sprintf("bench-n%d.md", b.o.n))
	if err := os.WriteFile(file, []byte(table), 0o644); err != nil {
		return err
	}
	logf("wrote %s", file)
	return nil
}
