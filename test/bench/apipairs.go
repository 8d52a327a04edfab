package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// P1, P1p, P2 and P2b as bench-report runs them: one pair a process, on a plane of its own
// started for it, both sides served by its one kube-apiserver and etcd: the aggregated API
// (the subject) and Butler's own CRDs (the baseline). Each namespace is a Team's with a quota
// and a ProviderConfig on both sides, so aggregated creates pass the quota Ledger and CRD creates
// kube-apiserver's ResourceQuota admission. The side that goes first alternates pair by pair.

const (
	sideAgg = "aggregated"
	sideCRD = "CRD"
)

// apiFigureIDs are the figures one API pair adds a run to; P5 is added when both of its
// growths are above zero (a garbage collection can make a small one negative).
var apiFigureIDs = []string{"P1", "P1p", "P2", "P2b", "P5"}

// apiFigures are the figures' definitions for o's sizes; the runs are added pair by pair.
func apiFigures(o options) map[string]figure {
	setup := fmt.Sprintf("%d TenantClusters a side in %d namespaces, each namespace a Team's (maxClusters: its share of the %d) "+
		"holding the ProviderConfig the clusters name, on both sides; the CRD side's namespaces have a ResourceQuota of as many "+
		"TenantClusters", o.n, o.namespaces, o.n)
	cmd := fmt.Sprintf("make bench-report ONLY=P2 BENCH_API_N=%d (P1, P1p, P2 and P2b are measured together, a pair a plane)", o.n)
	note := "Both sides run on one plane (cmd/butler-localplane, butler's workers off), started for the pair and stopped after it; " +
		"every object of one side has its twin on the other, created from the same JSON."
	return map[string]figure{
		"P1": {
			ID: "P1", Title: fmt.Sprintf("A full List of %d TenantClusters through kube-apiserver, JSON on both sides.", o.n),
			What:     fmt.Sprintf("%s; the median of %d Lists (after %d unmeasured) of every TenantCluster through kube-apiserver, aggregated to butler-apiserver, in JSON", setup, o.rounds, o.warmup),
			Baseline: "the same List of the CRD copy, served by kube-apiserver itself, in JSON; the Lists of both sides (and P1p's) take turns, their order reversed every round",
			Subject:  sideAgg, Base: sideCRD, Unit: "ms", Better: "lower", Command: cmd, Notes: []string{note},
		},
		"P1p": {
			ID: "P1p", Title: fmt.Sprintf("A full List of %d TenantClusters through kube-apiserver, the aggregated side in protobuf against the CRD side in JSON.", o.n),
			What: fmt.Sprintf("%s; the median of %d Lists of every TenantCluster through kube-apiserver, aggregated to butler-apiserver, "+
				"in protobuf (as a generated clientset can ask)", setup, o.rounds),
			Baseline: "the same List of the CRD copy in JSON: CRDs cannot serve protobuf, so this is what a client gains by asking for it, " +
				"not a like-for-like comparison of the two servers (P1 is)",
			Subject: sideAgg + " (protobuf)", Base: sideCRD + " (JSON)", Unit: "ms", Better: "lower", Command: cmd, Notes: []string{note},
		},
		"P2": {
			ID: "P2", Title: fmt.Sprintf("TenantClusters created per second by %d clients.", o.clients),
			What: fmt.Sprintf("%s; the aggregated side's creates (JSON, through kube-apiserver) each pass butler's admission: the Team's "+
				"quota Ledger (a compare-and-swap on the Team) and the ProviderConfig's use. Rate: creates over the time spent creating, "+
				"in %d batches that alternate with the CRD side's", setup, o.batches),
			Baseline: "the same creates of the CRD copy, each through kube-apiserver's ResourceQuota admission (a compare-and-swap on the quota)",
			Subject:  sideAgg, Base: sideCRD, Unit: "/s", Better: "higher", Command: cmd,
			Notes: []string{note, "After the pair's measures, one more create per namespace on each side must be refused by its quota (403): " +
				"the proof that each side's quota counted every create."},
		},
		"P5": {
			ID: "P5", Title: fmt.Sprintf("Memory that %d TenantClusters cost the server that holds them.", o.n),
			What: fmt.Sprintf("%s; butler-apiserver's PSS (smaps_rollup) after P2's creates and %s of rest, less its PSS before them: "+
				"the aggregated side's objects in its watch cache, its indexes and its quota Ledger", setup, p5Settle),
			Baseline: "kube-apiserver's PSS growth over the same window, where the CRD copy's objects live (it also proxies the aggregated " +
				"side's creates, which leave nothing behind once collected); the shared etcd's growth is left out of both",
			Subject: "butler-apiserver", Base: "kube-apiserver", Unit: "MiB", Better: "lower", Command: cmd, Notes: []string{note},
		},
		"P2b": {
			ID: "P2b", Title: fmt.Sprintf("%d updates reaching a watcher.", o.updates),
			What: fmt.Sprintf("%s; %d clients patch a label on %d TenantClusters through kube-apiserver while one watch of all of them "+
				"is open; the time from the first patch sent until the watcher received the last event, the median of %d rounds",
				setup, o.clients, o.updates, o.watchRounds),
			Baseline: "the same rounds on the CRD copy; the sides' rounds take turns, their order reversed every round",
			Subject:  sideAgg, Base: sideCRD, Unit: "ms", Better: "lower", Command: cmd, Notes: []string{note},
		},
	}
}

// apiRaw is what one API pair measured, before any arithmetic.
type apiRaw struct {
	created    int                      // TenantClusters each side created while the clock ran
	createTime map[string]time.Duration // by side
	lists      map[string]*sample       // by List variant
	watches    watchResults
	// listed is the TenantClusters each side's List held before P1, stored what it holds at the
	// end, refused the creates past the quota its admission refused; teams and providerConfigs
	// are each side's, counted at the end.
	listed, stored, refused, teams, providerConfigs map[string]int
	// growth is each server's PSS growth over P2's creates (P5), by side.
	growth map[string]int64
}

// measured is one figure's run in a pair, with the work each side did.
type measured struct {
	subject, baseline float64
	work              map[string]map[string]int // side → kind → count
}

// values turns a pair's measures into each figure's subject and baseline values.
func (r apiRaw) values() (map[string]measured, error) {
	rate := func(s string) float64 {
		if r.createTime[s] <= 0 {
			return 0
		}
		return float64(r.created) / r.createTime[s].Seconds()
	}
	millis := func(s *sample) float64 {
		if s == nil {
			return 0
		}
		return float64(s.median()) / float64(time.Millisecond)
	}
	perSide := func(of func(string) map[string]int) map[string]map[string]int {
		return map[string]map[string]int{sideAgg: of(sideAgg), sideCRD: of(sideCRD)}
	}
	listed := perSide(func(s string) map[string]int { return map[string]int{"TenantClusters in each List": r.listed[s]} })
	out := map[string]measured{
		"P1":  {millis(r.lists["agg-json"]), millis(r.lists["crd-json"]), listed},
		"P1p": {millis(r.lists["agg-protobuf"]), millis(r.lists["crd-json"]), listed},
		"P2": {rate(sideAgg), rate(sideCRD), perSide(func(s string) map[string]int {
			return map[string]int{"TenantClusters created on the clock": r.created, "TenantClusters stored at the end": r.stored[s],
				"Teams": r.teams[s], "ProviderConfigs": r.providerConfigs[s], "creates past the quota refused (403)": r.refused[s]}
		})},
		"P2b": {millis(r.watches.totals[sideAgg]), millis(r.watches.totals[sideCRD]), perSide(func(s string) map[string]int {
			seen, rounds := 0, 0
			if l := r.watches.latencies[s]; l != nil {
				seen = len(l.durations)
			}
			if t := r.watches.totals[s]; t != nil {
				rounds = len(t.durations)
			}
			return map[string]int{"updates seen by the watcher": seen, "watch rounds": rounds}
		})},
	}
	for _, id := range apiFigureIDs {
		if m := out[id]; id != "P5" && (m.subject <= 0 || m.baseline <= 0) {
			return nil, fmt.Errorf("%s: no measure of a side (%v against %v)", id, m.subject, m.baseline)
		}
	}
	if r.growth[sideAgg] > 0 && r.growth[sideCRD] > 0 {
		out["P5"] = measured{float64(r.growth[sideAgg]) / (1 << 20), float64(r.growth[sideCRD]) / (1 << 20),
			perSide(func(s string) map[string]int { return map[string]int{"TenantClusters stored at the end": r.stored[s]} })}
	}
	return out, nil
}

// inPairOrder puts the subject's item first when subjectFirst, else the baseline's.
func inPairOrder[T any](subject, baseline []T, subjectFirst bool) []T {
	if subjectFirst {
		return slices.Concat(subject, baseline)
	}
	return slices.Concat(baseline, subject)
}

// runAPIPair runs pair number k of P1, P1p, P2 and P2b on a fresh plane and adds it to each
// figure's file (k = 0 starts them anew).
func runAPIPair(ctx context.Context, o options, root string, k int) error {
	figs := map[string]*figure{}
	for id, def := range apiFigures(o) {
		f, err := loadFigure(figurePath(o.figures, id), k == 0, def)
		if err != nil {
			return err
		}
		figs[id] = f
	}
	run := pair{SubjectFirst: pairOrder(k), Started: time.Now(), Load: loadavg()}
	dir, err := os.MkdirTemp("", "butler-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := startPlane(root, dir, o.butlerArgs)
	if err != nil {
		return err
	}
	raw, err := measureAPIPair(ctx, p, o, run.SubjectFirst, fmt.Sprintf("p%d-", k))
	p.stop()
	if err != nil {
		return fmt.Errorf("API pair %d: %w", k+1, err)
	}
	values, err := raw.values()
	if err != nil {
		return fmt.Errorf("API pair %d: %w", k+1, err)
	}
	run.Took = time.Since(run.Started).Seconds()
	for _, id := range apiFigureIDs {
		f, m := figs[id], values[id]
		if m.subject <= 0 {
			logf("%s pair %d: not measured (a growth at or below zero: %d against %d bytes)", id, k+1, raw.growth[sideAgg], raw.growth[sideCRD])
			continue
		}
		r := run
		r.Subject, r.Baseline = m.subject, m.baseline
		f.Runs = append(f.Runs, r)
		for s, counts := range m.work {
			f.addWork(s, counts)
		}
		f.Commit, f.Machine = o.commit, machine()
		if err := f.save(figurePath(o.figures, id)); err != nil {
			return err
		}
		logf("%s pair %d: %s %s, %s %s", id, k+1, f.Subject, f.unit(m.subject), f.Base, f.unit(m.baseline))
	}
	return nil
}

// measureAPIPair measures one pair on plane p: P2's creates, P1's Lists, P2b's watch rounds,
// the side that goes first in each as subjectFirst says; then the quotas' proof.
func measureAPIPair(ctx context.Context, p *plane, o options, subjectFirst bool, label string) (apiRaw, error) {
	agg, crd := p.sides()
	agg.name, crd.name = sideAgg, sideCRD
	kube := kubernetes.NewForConfigOrDie(p.kube)
	dyn := dynamic.NewForConfigOrDie(p.kube)
	lister, err := httpClient(p.kube)
	if err != nil {
		return apiRaw{}, err
	}
	clients := make([]*http.Client, o.clients)
	for i := range clients {
		if clients[i], err = httpClient(p.kube); err != nil {
			return apiRaw{}, err
		}
	}
	limit := func(i int) int { return perNamespace(o.n, o.namespaces, i) }
	all, timed, err := prepareSides(ctx, dyn, kube, lister, o.crds, o.n, o.namespaces, agg, crd, true, limit)
	if err != nil {
		return apiRaw{}, err
	}
	raw := apiRaw{created: len(timed), listed: map[string]int{}, stored: map[string]int{}, refused: map[string]int{},
		teams: map[string]int{}, providerConfigs: map[string]int{}}
	runs := inPairOrder([]sideRun{{name: sideAgg, side: agg, wire: wireJSON}}, []sideRun{{name: sideCRD, side: crd, wire: wireJSON}}, subjectFirst)
	noCPU := func() map[string]time.Duration { return nil }

	procs, err := p.processes()
	if err != nil {
		return apiRaw{}, err
	}
	before := serversPSS(procs)
	logf("P2: creating %d TenantClusters on each side with %d clients", len(timed), o.clients)
	if raw.createTime, _, err = createBatches(ctx, runs, clients, timed, o.batches, noCPU); err != nil {
		return apiRaw{}, err
	}
	time.Sleep(p5Settle)
	after := serversPSS(procs)
	raw.growth = map[string]int64{sideAgg: after[sideAgg] - before[sideAgg], sideCRD: after[sideCRD] - before[sideCRD]}
	for _, s := range []side{agg, crd} {
		if raw.listed[s.name], err = countItems(ctx, lister, s.collection("")); err != nil {
			return apiRaw{}, err
		}
	}

	logf("P1: %d List rounds (+%d warm-up)", o.rounds, o.warmup)
	variants := inPairOrder(
		[]listVariant{{"agg-json", httpList(lister, agg.collection(""), contentJSON)}, {"agg-protobuf", httpList(lister, agg.collection(""), contentProtobuf)}},
		[]listVariant{{"crd-json", httpList(lister, crd.collection(""), contentJSON)}}, subjectFirst)
	if raw.lists, err = listRounds(ctx, variants, o.warmup, o.rounds); err != nil {
		return apiRaw{}, err
	}

	logf("P2b: %d rounds of %d updates per side", o.watchRounds, o.updates)
	if raw.watches, err = runWatchRounds(ctx, runs, o.watchRounds, label, lister, clients, all[:o.updates]); err != nil {
		return apiRaw{}, err
	}

	for _, s := range []side{agg, crd} {
		if raw.refused[s.name], err = refusedPastQuota(ctx, lister, s, o.namespaces); err != nil {
			return apiRaw{}, err
		}
		for _, c := range []struct {
			into map[string]int
			url  string
		}{{raw.stored, s.collection("")}, {raw.teams, s.base + "/teams"}, {raw.providerConfigs, s.base + "/providerconfigs"}} {
			if c.into[s.name], err = countItems(ctx, lister, c.url); err != nil {
				return apiRaw{}, err
			}
		}
	}
	return raw, nil
}

// p5Settle is the rest after P2's creates before P5 reads the servers' memory: the requests'
// garbage is collected by then (both servers run at Go's default GOGC).
const p5Settle = 10 * time.Second

// serversPSS is the PSS of the server holding each side's objects: butler-apiserver the
// aggregated side's, kube-apiserver the CRD copy's.
func serversPSS(procs map[string]int) map[string]int64 {
	out := map[string]int64{}
	for s, name := range map[string]string{sideAgg: "butler-apiserver", sideCRD: "kube-apiserver"} {
		m, _ := residentMemory(procs[name])
		out[s] = m.pss
	}
	return out
}

// quotaRefusals are what each side's quota says when it refuses a create.
var quotaRefusals = map[string]string{sideAgg: "exceeds the limits of team", sideCRD: "exceeded quota"}

// refusedPastQuota tries one create more in each namespace of side s, whose quota is full, and
// counts those its quota refused (403, its message); one that was created is not counted (the
// report then shows the sides' work differ), any other answer is an error.
func refusedPastQuota(ctx context.Context, c *http.Client, s side, namespaces int) (int, error) {
	refused := 0
	for i := range namespaces {
		k := key{namespace: namespaceName(i), name: "tc-past-quota"}
		err := send(ctx, c, http.MethodPost, s.collection(k.namespace), contentJSON, tenantCluster(s.group, k), http.StatusCreated)
		switch {
		case err == nil:
		case strings.Contains(err.Error(), "403") && strings.Contains(err.Error(), quotaRefusals[s.name]):
			refused++
		default:
			return 0, fmt.Errorf("the create past %s's quota: %w", s.name, err)
		}
	}
	return refused, nil
}
