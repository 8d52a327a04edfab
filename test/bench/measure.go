package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	restclientwatch "k8s.io/client-go/rest/watch"

	butlerv1alpha1 "github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/scheme"
)

const (
	contentJSON     = "application/json"
	contentProtobuf = "application/vnd.kubernetes.protobuf"
	// contentTable is what kubectl get asks for.
	contentTable = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	contentMerge = "application/merge-patch+json"
)

// side is one of the two ways the same TenantClusters are served.
type side struct {
	name  string // "aggregated" or "CRD"
	group string
	// base is https://host:port/apis/<group>/v1alpha1 through kube-apiserver.
	base string
	// etcdPrefix is where the side's tenantclusters are in etcd.
	etcdPrefix string
}

func (s side) collection(ns string) string {
	if ns == "" {
		return s.base + "/tenantclusters"
	}
	return s.base + "/namespaces/" + ns + "/tenantclusters"
}

// key names one TenantCluster.
type key struct{ namespace, name string }

func keys(n, namespaces int) []key {
	out := make([]key, n)
	for i := range out {
		out[i] = key{namespace: fmt.Sprintf("bench-%02d", i%namespaces), name: fmt.Sprintf("tc-%05d", i)}
	}
	return out
}

// tenantCluster is the object created on both sides: the same spec, with fields that both
// Butler's CRD schema and the aggregated API know (the CRD requires kubernetesVersion and
// workers.replicas; both apply their own defaults to the rest). Its teamRef names the Team
// named as its namespace, which exists only with -teams.
func tenantCluster(group string, k key) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"%s/v1alpha1","kind":"TenantCluster",`+
		`"metadata":{"name":%q,"namespace":%q,"labels":{"bench":"true","team":"platform"}},`+
		`"spec":{"kubernetesVersion":"v1.31.4","teamRef":{"name":%q},"providerConfigRef":{"name":"harvester"},`+
		`"controlPlane":{"replicas":1},`+
		`"workers":{"replicas":3,"machineTemplate":{"cpu":4,"memory":"16Gi","diskSize":"100Gi","os":{"type":"talos"}}},`+
		`"networking":{"podCIDR":"10.244.0.0/16","serviceCIDR":"10.96.0.0/12"}}}`,
		group, k.name, k.namespace, k.namespace)
}

// wire is how a client talks to a side: JSON (as the bench's raw requests and kubectl do), or
// protobuf (as a generated clientset can ask for; CRDs cannot serve it).
type wire struct {
	contentType, accept string
	// body encodes the TenantCluster of tenantCluster as contentType.
	body func(group string, k key) ([]byte, error)
}

var (
	wireJSON = wire{contentType: contentJSON, accept: contentJSON,
		body: func(group string, k key) ([]byte, error) { return tenantCluster(group, k), nil }}
	// wireProtobuf is what a generated clientset sends with ContentType protobuf.
	wireProtobuf = wire{contentType: contentProtobuf, accept: contentProtobuf + ", " + contentJSON, body: tenantClusterProtobuf}
)

// tenantClusterProtobuf is tenantCluster's object encoded as protobuf.
func tenantClusterProtobuf(group string, k key) ([]byte, error) {
	var tc butlerv1alpha1.TenantCluster
	if err := json.Unmarshal(tenantCluster(group, k), &tc); err != nil {
		return nil, err
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		return nil, fmt.Errorf("no protobuf serializer")
	}
	return runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, butlerv1alpha1.SchemeGroupVersion), &tc)
}

// create creates the objects of ks on s with one worker per client, speaking w, and returns the
// time taken.
func create(ctx context.Context, s side, w wire, clients []*http.Client, ks []key) (time.Duration, error) {
	work := make(chan key)
	errs := make(chan error, len(clients))
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range clients {
		wg.Go(func() {
			for k := range work {
				body, err := w.body(s.group, k)
				if err == nil {
					err = sendAs(ctx, c, http.MethodPost, s.collection(k.namespace), w.contentType, w.accept, body, http.StatusCreated)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
feed:
	for _, k := range ks {
		select {
		case work <- k:
		case err := <-errs:
			close(work)
			wg.Wait()
			return 0, err
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return elapsed, ctx.Err()
}

// listFunc does one full List and returns the bytes it read.
type listFunc func(context.Context) (int64, error)

func httpList(c *http.Client, url, accept string) listFunc {
	return func(ctx context.Context) (int64, error) { return get(ctx, c, url, accept) }
}

// etcdRange reads every key under prefix with its value, as the storage layer's List does
// when it goes to etcd.
func etcdRange(client *clientv3.Client, prefix string, want int) listFunc {
	return func(ctx context.Context) (int64, error) {
		resp, err := client.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			return 0, err
		}
		if len(resp.Kvs) != want {
			return 0, fmt.Errorf("etcd range %s: %d keys, want %d", prefix, len(resp.Kvs), want)
		}
		var n int64
		for _, kv := range resp.Kvs {
			n += int64(len(kv.Value))
		}
		return n, nil
	}
}

// sample is the durations of one measured operation over the rounds.
type sample struct {
	durations []time.Duration
	bytes     int64
}

func (s *sample) add(d time.Duration) { s.durations = append(s.durations, d) }

// percentile is the nearest-rank percentile p (0-100), by stats.go's arithmetic.
func (s *sample) percentile(p float64) time.Duration { return time.Duration(percentile(s.floats(), p)) }

// median is the middle duration, the mean of the two middle ones when their number is even
// (a pair's two watch rounds count both).
func (s *sample) median() time.Duration { return time.Duration(median(s.floats())) }

func (s *sample) floats() []float64 {
	xs := make([]float64, len(s.durations))
	for i, d := range s.durations {
		xs[i] = float64(d)
	}
	return xs
}

func (s *sample) p95() time.Duration { return s.percentile(95) }

// listVariant is one way to read the whole collection.
type listVariant struct {
	name string
	list listFunc
}

// listRounds runs every variant once per round, in an order that reverses every round, after
// warmup unrecorded rounds.
func listRounds(ctx context.Context, variants []listVariant, warmup, rounds int) (map[string]*sample, error) {
	samples := map[string]*sample{}
	for _, v := range variants {
		samples[v.name] = &sample{}
	}
	for r := range warmup + rounds {
		order := slices.Clone(variants)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			start := time.Now()
			n, err := v.list(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v.name, err)
			}
			if r >= warmup {
				samples[v.name].add(time.Since(start))
				samples[v.name].bytes = n
			}
		}
	}
	return samples, nil
}

// watchEvent is what the watcher reads of each event.
type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Name            string            `json:"name"`
			Namespace       string            `json:"namespace"`
			ResourceVersion string            `json:"resourceVersion"`
			Labels          map[string]string `json:"labels"`
		} `json:"metadata"`
		Message string `json:"message"` // of an ERROR event's Status
	} `json:"object"`
}

// watchResult is one round of updates seen by a watcher.
type watchResult struct {
	total     time.Duration // first update sent to last event received
	latencies []time.Duration
	rewatches int // watches the server ended early and the watcher opened again
}

// watchRound opens a watch on all of s's tenantclusters from the current resourceVersion,
// patches a label on every object of ks with one goroutine per client, and waits until the
// watcher has seen every change.
func watchRound(ctx context.Context, s side, w wire, watcher *http.Client, clients []*http.Client, ks []key, round string) (watchResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	rv, err := currentResourceVersion(ctx, s, watcher)
	if err != nil {
		return watchResult{}, err
	}
	rw := newRoundWatch(s, w, watcher, ks, round)
	stream, err := rw.open(ctx, rv)
	if err != nil {
		return watchResult{}, err
	}
	done := make(chan error, 1)
	go func() { done <- rw.follow(ctx, stream, rv) }()
	sent, firstSent, err := patchRound(ctx, s, w, clients, ks, round)
	if err != nil {
		return watchResult{}, err
	}
	select {
	case err := <-done:
		if err != nil {
			return watchResult{}, err
		}
	case <-ctx.Done():
		return watchResult{}, fmt.Errorf("watch %s: %w", s.name, ctx.Err())
	}
	return rw.result(sent, firstSent), nil
}

// currentResourceVersion is s's current resourceVersion, from a consistent List of one item.
func currentResourceVersion(ctx context.Context, s side, watcher *http.Client) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.collection("")+"?limit=1", nil)
	req.Header.Set("Accept", contentJSON)
	resp, err := watcher.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	return list.Metadata.ResourceVersion, err
}

// roundWatch is the watcher's side of one round: when each object's change of the round was
// seen (received, by the index of its key in ks), and how often the watch was opened again.
type roundWatch struct {
	s         side
	w         wire
	watcher   *http.Client
	round     string
	index     map[key]int
	received  []time.Time
	rewatches int
}

func newRoundWatch(s side, w wire, watcher *http.Client, ks []key, round string) *roundWatch {
	rw := &roundWatch{s: s, w: w, watcher: watcher, round: round, index: map[key]int{}, received: make([]time.Time, len(ks))}
	for i, k := range ks {
		rw.index[k] = i
	}
	return rw
}

// open opens the watch from rv.
func (rw *roundWatch) open(ctx context.Context, rv string) (events, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
		rw.s.collection("")+"?watch=1&allowWatchBookmarks=false&resourceVersion="+rv, nil)
	req.Header.Set("Accept", rw.w.accept)
	resp, err := rw.watcher.Do(req)
	if err != nil {
		return events{}, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return events{}, fmt.Errorf("watch %s: %s", rw.s.name, resp.Status)
	}
	return newEvents(resp), nil
}

// follow reads stream until every object's change of the round is seen, opening the watch
// again from the last resourceVersion seen if the server ends it (as a reflector does: a
// server may close a watcher that does not keep up).
func (rw *roundWatch) follow(ctx context.Context, stream events, lastRV string) error {
	defer func() { stream.body.Close() }()
	seen := 0
	for seen < len(rw.received) {
		ev, err := stream.next()
		if err != nil {
			if ctx.Err() != nil || rw.rewatches >= 10 {
				return fmt.Errorf("watch %s after %d of %d events (%d rewatches): %w", rw.s.name, seen, len(rw.received), rw.rewatches, err)
			}
			stream.body.Close()
			rw.rewatches++
			if stream, err = rw.open(ctx, lastRV); err != nil {
				return err
			}
			continue
		}
		now := time.Now()
		if ev.Type == "ERROR" {
			return fmt.Errorf("watch %s: %s", rw.s.name, ev.Object.Message)
		}
		lastRV = ev.Object.Metadata.ResourceVersion
		if ev.Type != "MODIFIED" || ev.Object.Metadata.Labels["bench-round"] != rw.round {
			continue
		}
		i, ok := rw.index[key{ev.Object.Metadata.Namespace, ev.Object.Metadata.Name}]
		if !ok || !rw.received[i].IsZero() {
			continue
		}
		rw.received[i] = now
		seen++
	}
	return nil
}

// result is each object's time from its patch sent to its change seen, and the round's from
// the first patch sent to the last change seen.
func (rw *roundWatch) result(sent []time.Time, firstSent time.Time) watchResult {
	result := watchResult{rewatches: rw.rewatches}
	last := firstSent
	for i := range sent {
		result.latencies = append(result.latencies, rw.received[i].Sub(sent[i]))
		if rw.received[i].After(last) {
			last = rw.received[i]
		}
	}
	result.total = last.Sub(firstSent)
	return result
}

// patchRound patches the label bench-round=round on every object of ks, with one goroutine
// per client, and says when each patch and the first were sent.
func patchRound(ctx context.Context, s side, w wire, clients []*http.Client, ks []key, round string) (sent []time.Time, firstSent time.Time, err error) {
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{"bench-round":%q}}}`, round)
	sent = make([]time.Time, len(ks))
	work := make(chan int)
	var sentOnce sync.Once
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for i := range work {
				sentOnce.Do(func() { firstSent = time.Now() })
				sent[i] = time.Now()
				k := ks[i]
				if err := sendAs(ctx, c, http.MethodPatch, s.collection(k.namespace)+"/"+k.name, contentMerge, w.accept, patch, http.StatusOK); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	for i := range ks {
		if failed.Load() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if err := failed.Load(); err != nil {
		return nil, time.Time{}, *err
	}
	return sent, firstSent, nil
}

// events reads a watch's events: JSON as the watcher of the JSON rounds always did (only the
// fields it needs), protobuf (length-delimited frames) decoded as a generated clientset does.
type events struct {
	body io.ReadCloser
	next func() (watchEvent, error)
}

func newEvents(resp *http.Response) events {
	if mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mediaType != contentProtobuf {
		dec := json.NewDecoder(resp.Body)
		return events{body: resp.Body, next: func() (ev watchEvent, err error) { err = dec.Decode(&ev); return ev, err }}
	}
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	frames := info.StreamSerializer.Framer.NewFrameReader(resp.Body)
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), scheme.Codecs.UniversalDeserializer())
	return events{body: resp.Body, next: func() (watchEvent, error) {
		typ, obj, err := dec.Decode()
		if err != nil {
			return watchEvent{}, err
		}
		ev := watchEvent{Type: string(typ)}
		switch o := obj.(type) {
		case *metav1.Status:
			ev.Object.Message = o.Message
		case metav1.Object:
			m := &ev.Object.Metadata
			m.Name, m.Namespace, m.ResourceVersion, m.Labels = o.GetName(), o.GetNamespace(), o.GetResourceVersion(), o.GetLabels()
		}
		return ev, nil
	}}
}

// sideRun is a side spoken to in one wire format, under a name of its own in the results.
type sideRun struct {
	name string
	side side
	wire wire
	// nameSuffix, if set, is added to every object's name: a second run on the same side.
	nameSuffix string
}

// createBatches creates ks in batches, each batch on every run, in an order that reverses every
// batch; it returns each run's time creating, and the CPU each process of cpu used meanwhile.
func createBatches(ctx context.Context, runs []sideRun, clients []*http.Client, ks []key, batches int,
	cpu func() map[string]time.Duration) (map[string]time.Duration, map[string]map[string]time.Duration, error) {
	took := map[string]time.Duration{}
	used := map[string]map[string]time.Duration{}
	for _, r := range runs {
		used[r.name] = map[string]time.Duration{}
	}
	batch := max(1, (len(ks)+batches-1)/batches)
	for b := 0; b*batch < len(ks); b++ {
		part := ks[b*batch : min(len(ks), (b+1)*batch)]
		order := slices.Clone(runs)
		if b%2 == 1 {
			slices.Reverse(order)
		}
		for _, r := range order {
			ks := part
			if r.nameSuffix != "" {
				ks = make([]key, len(part))
				for i, k := range part {
					ks[i] = key{namespace: k.namespace, name: k.name + r.nameSuffix}
				}
			}
			before := cpu()
			d, err := create(ctx, r.side, r.wire, clients, ks)
			if err != nil {
				return nil, nil, fmt.Errorf("P2 %s: %w", r.name, err)
			}
			took[r.name] += d
			for name, t := range cpu() {
				used[r.name][name] += t - before[name]
			}
		}
	}
	return took, used, nil
}

// watchResults are the watch rounds of each run.
type watchResults struct {
	totals, latencies map[string]*sample
	rewatches         map[string]int
}

// runWatchRounds runs rounds watch rounds of each run, in an order that reverses every round;
// round r patches the label bench-round to <label><r>.
func runWatchRounds(ctx context.Context, runs []sideRun, rounds int, label string, watcher *http.Client, clients []*http.Client, ks []key) (watchResults, error) {
	res := watchResults{totals: map[string]*sample{}, latencies: map[string]*sample{}, rewatches: map[string]int{}}
	for _, r := range runs {
		res.totals[r.name], res.latencies[r.name] = &sample{}, &sample{}
	}
	for i := range rounds {
		order := slices.Clone(runs)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, r := range order {
			round, err := watchRound(ctx, r.side, r.wire, watcher, clients, ks, fmt.Sprintf("%s%d", label, i))
			if err != nil {
				return watchResults{}, fmt.Errorf("P2b %s: %w", r.name, err)
			}
			res.totals[r.name].add(round.total)
			res.rewatches[r.name] += round.rewatches
			res.latencies[r.name].durations = append(res.latencies[r.name].durations, round.latencies...)
		}
	}
	return res, nil
}
