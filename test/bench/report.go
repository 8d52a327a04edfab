package main

import (
	"fmt"
	"strings"
	"time"
)

// protobufResult is P2 and P2b with the aggregated side spoken to in protobuf (aggName), the
// CRD side in JSON, measured after the rest; created is 0 when they did not run.
type protobufResult struct {
	aggName string
	// aggJSONName is the aggregated side in JSON in the same phase, on objects of its own.
	aggJSONName string
	created     int
	createTime  map[string]time.Duration
	createCPU   map[string]map[string]time.Duration
	watches     watchResults
}

// report is the outcome of one run.
type report struct {
	o          options
	lists      map[string]*sample
	createTime map[string]time.Duration
	createCPU  map[string]map[string]time.Duration // side → process → CPU time during its creates
	created    int                                 // objects created per side while the clock ran
	watches    watchResults
	protobuf   protobufResult

	rssBefore, rssLoaded, rssListed, rssEnd map[string]memory
	loadBefore, loadAfter                   string
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}

// perObject is milliseconds of d per object.
func perObject(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / 1000 / float64(n)
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// medianP95 renders "median (p95)".
func medianP95(s *sample) string { return ms(s.median()) + " (" + ms(s.p95()) + ")" }

func (r report) String() string {
	var b strings.Builder
	l := r.lists
	row := func(cells ...string) { b.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	listRatio := func(a, c string) string {
		return ratio(float64(l[a].median()), float64(l[c].median())) + " (" + ratio(float64(l[a].p95()), float64(l[c].p95())) + ")"
	}

	fmt.Fprintf(&b, "N = %d TenantClusters per side in %d namespaces; %d List rounds (median (p95)); "+
		"%d clients; %d watch rounds of %d updates. Load average before %s, after %s.\n\n",
		r.o.n, r.o.namespaces, r.o.rounds, r.o.clients, r.o.watchRounds, r.o.updates, r.loadBefore, r.loadAfter)
	if r.o.teams {
		b.WriteString("Each namespace is a Team's, with maxClusters: aggregated creates and updates pass the Team quota ledger. " +
			"On the CRD side each namespace has a ResourceQuota counting TenantClusters: creates pass kube-apiserver's quota admission.\n\n")
	}
	row("figure", "aggregated (butler-apiserver)", "CRD (kube-apiserver)", "aggregated / CRD", "target")
	row("---", "---", "---", "---", "---")
	row("P1 List through kube-apiserver, JSON", medianP95(l["agg-json"]), medianP95(l["crd-json"]), listRatio("agg-json", "crd-json"), "≤ 0.8")
	row("P1 List through kube-apiserver, protobuf (CRD: JSON)", medianP95(l["agg-protobuf"]), medianP95(l["crd-json"]), listRatio("agg-protobuf", "crd-json"), "≤ 0.8")
	row("P1 kubectl get -A (Table)", medianP95(l["agg-table"]), medianP95(l["crd-table"]), listRatio("agg-table", "crd-table"), "")
	row("floor: List straight to butler-apiserver, JSON", medianP95(l["direct-json"]), "—",
		ratio(float64(l["direct-json"].median()), float64(l["agg-json"].median()))+" of P1 JSON (the rest is the aggregator hop)", "")
	row("floor: List straight to butler-apiserver, protobuf", medianP95(l["direct-protobuf"]), "—",
		ratio(float64(l["direct-protobuf"].median()), float64(l["agg-protobuf"].median()))+" of P1 protobuf", "")
	row("floor: etcd range read of the same keys", medianP95(l["etcd-agg"]), medianP95(l["etcd-crd"]), listRatio("etcd-agg", "etcd-crd"), "")

	p2 := func(label, agg string, created int, took map[string]time.Duration, used map[string]map[string]time.Duration) {
		rate := func(name string) float64 {
			if took[name] == 0 {
				return 0
			}
			return float64(created) / took[name].Seconds()
		}
		row(fmt.Sprintf("P2 creates/s, %d clients%s", r.o.clients, label), fmt.Sprintf("%.0f /s", rate(agg)), fmt.Sprintf("%.0f /s", rate("CRD")),
			ratio(rate(agg), rate("CRD")), "≥ 1.2")
		cpuPerCreate := func(side string) (string, float64) {
			var parts []string
			var total time.Duration
			for _, proc := range []string{"kube-apiserver", "butler-apiserver", "etcd"} {
				t := used[side][proc]
				total += t
				if t >= 5*time.Millisecond*time.Duration(created)/100 { // at least 0.05 ms per create
					parts = append(parts, fmt.Sprintf("%s %.2f", strings.TrimSuffix(proc, "-apiserver"), perObject(t, created)))
				}
			}
			return fmt.Sprintf("%.2f ms (%s)", perObject(total, created), strings.Join(parts, " + ")), perObject(total, created)
		}
		aggCPU, aggTotal := cpuPerCreate(agg)
		crdCPU, crdTotal := cpuPerCreate("CRD")
		row("P2 CPU per create: kube + butler + etcd"+label, aggCPU, crdCPU, ratio(aggTotal, crdTotal), "")
	}
	p2b := func(label, agg string, w watchResults) {
		rewatched := func(name string) string {
			if w.rewatches[name] == 0 {
				return ""
			}
			return fmt.Sprintf(" (%d watches ended by the server, resumed)", w.rewatches[name])
		}
		tot, lat := w.totals, w.latencies
		row(fmt.Sprintf("P2b %d updates seen by a watcher (median round)%s", r.o.updates, label), ms(tot[agg].median())+rewatched(agg), ms(tot["CRD"].median())+rewatched("CRD"),
			ratio(float64(tot[agg].median()), float64(tot["CRD"].median())), "≤ 0.8")
		row("P2b update sent → event received, median (p95)"+label, medianP95(lat[agg]), medianP95(lat["CRD"]),
			ratio(float64(lat[agg].median()), float64(lat["CRD"].median()))+" ("+ratio(float64(lat[agg].p95()), float64(lat["CRD"].p95()))+")", "")
	}
	p2("", "aggregated", r.created, r.createTime, r.createCPU)
	p2b("", "aggregated", r.watches)
	if pb := r.protobuf; pb.created > 0 {
		p2(fmt.Sprintf(", protobuf (CRD: JSON; %d more each, after P2b)", pb.created), pb.aggName, pb.created, pb.createTime, pb.createCPU)
		p2(", the same phase, the aggregated side in JSON", pb.aggJSONName, pb.created, pb.createTime, pb.createCPU)
		p2b(", protobuf (CRD: JSON)", pb.aggName, pb.watches)
	}

	growButler := r.rssLoaded["butler"].rss - r.rssBefore["butler"].rss
	growKube := r.rssLoaded["kube"].rss - r.rssBefore["kube"].rss
	row(fmt.Sprintf("P5 RSS growth from loading %d", r.o.n), "butler-apiserver +"+mib(growButler), "kube-apiserver +"+mib(growKube),
		ratio(float64(growButler), float64(growKube)), "")
	rssRow := func(who string) string {
		return mib(r.rssLoaded[who].rss) + " / " + mib(r.rssListed[who].rss) + " / " + mib(r.rssEnd[who].rss) + " (peak " + mib(r.rssEnd[who].peak) + ")"
	}
	row("P5 RSS loaded / after P1 / at the end", "butler-apiserver "+rssRow("butler"), "kube-apiserver "+rssRow("kube"),
		ratio(float64(r.rssLoaded["butler"].rss), float64(r.rssLoaded["kube"].rss))+" (loaded)", "butler ≤ 400 MiB at N=10,000")
	row("bytes: JSON List / protobuf List / etcd values, per object",
		fmt.Sprintf("%d / %d / %d", l["agg-json"].bytes/int64(r.o.n), l["agg-protobuf"].bytes/int64(r.o.n), l["etcd-agg"].bytes/int64(r.o.n)),
		fmt.Sprintf("%d / — / %d", l["crd-json"].bytes/int64(r.o.n), l["etcd-crd"].bytes/int64(r.o.n)),
		ratio(float64(l["agg-json"].bytes), float64(l["crd-json"].bytes))+" (JSON)", "")
	b.WriteString("\nTimes: aggregated/CRD below 1 means the aggregated API is faster; creates/s above 1 means it is faster. " +
		"RSS before loading: butler-apiserver " + mib(r.rssBefore["butler"].rss) + ", kube-apiserver " + mib(r.rssBefore["kube"].rss) +
		"; of the loaded RSS, pages of the binary (RssFile): butler-apiserver " + mib(r.rssLoaded["butler"].file) +
		", kube-apiserver " + mib(r.rssLoaded["kube"].file) + ".\n")
	return b.String()
}
