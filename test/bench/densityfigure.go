package main

import (
	"fmt"
	"strings"
	"time"
)

// P8: the management plane's memory per hibernated cluster, the clusters having run once
// (-density-ran). One run, not pairs: nothing else does the same work, so the baseline is the
// same plane before its first cluster. The spread is of the PSS reads over the measuring window,
// which says how steady the figure is within the run, not how it varies from run to run.

// densityFigure is P8 as the report renders it, kept in test/bench/figures/runs/P8.json.
type densityFigure struct {
	Clusters int `json:"clusters"` // hibernated when measured
	Created  int `json:"created"`
	// Ran is how many of them ran once (data written, then asked to sleep); absent from runs
	// before it was counted.
	Ran int `json:"ran,omitempty"`
	// PSSBefore and PSSAfter are the plane's processes' PSS summed (the tenants' datastore
	// among them), each read of the window before the first cluster and with all asleep.
	PSSBefore []int64 `json:"pssBefore"`
	PSSAfter  []int64 `json:"pssAfter"`
	// ProcessGrowth is each process's PSS growth per cluster (bytes, the last reads).
	ProcessGrowth map[string]int64 `json:"processGrowth"`
	// IdleCPUPercent is the plane's idle CPU growth per cluster, % of one core.
	IdleCPUPercent  float64         `json:"idleCpuPercent"`
	TenantProcesses int             `json:"tenantProcesses"` // left running with all asleep
	Held            int             `json:"held"`            // endpoints held by a listener
	ToSleep         time.Duration   `json:"toSleep"`         // median create -> Hibernated
	AllAsleep       time.Duration   `json:"allAsleep"`       // first create -> all Hibernated
	Wakes           []time.Duration `json:"wakes"`           // kubectl through a wake, at the end
	WakeErrors      int             `json:"wakeErrors"`
	Commit          string          `json:"commit"`
	Machine         string          `json:"machine"`
	Started         time.Time       `json:"started"`
	Idle            time.Duration   `json:"idle"` // each measuring window
}

// figure is the run as P8.
func (d *densityRun) figure() densityFigure {
	f := densityFigure{Clusters: d.asleep, Created: d.created, Ran: len(d.filled), PSSBefore: d.pssBefore, PSSAfter: d.pssAfter,
		ProcessGrowth: map[string]int64{}, TenantProcesses: d.tenants, Held: d.held, ToSleep: d.toSleep.median(),
		AllAsleep: d.allAsleep, Wakes: d.wakes.durations, WakeErrors: d.wakeErrors, Commit: d.o.commit, Machine: machine(),
		Started: d.started, Idle: d.o.idle}
	var cpu time.Duration
	for _, name := range planeProcesses {
		f.ProcessGrowth[name] = (d.after[name].pss - d.before[name].pss) / int64(max(d.asleep, 1))
		cpu += d.after[name].cpu - d.before[name].cpu
	}
	f.IdleCPUPercent = 100 * cpu.Seconds() / d.o.idle.Seconds() / float64(max(d.asleep, 1))
	return f
}

// perCluster is each read with all asleep less the median read before, per cluster, in MiB.
func (f *densityFigure) perCluster() []float64 {
	base := float64(medianBytes(f.PSSBefore))
	out := make([]float64, len(f.PSSAfter))
	for i, a := range f.PSSAfter {
		out[i] = (float64(a) - base) / float64(max(f.Clusters, 1)) / (1 << 20)
	}
	return out
}

// cell is P8's row in the report's table.
func (f *densityFigure) cell() string {
	s := summarize(f.perCluster())
	return fmt.Sprintf("**%.2f MiB** a cluster (%.2f - %.2f over %d reads of one run of %d)", s.Median, s.Min, s.Max, s.N, f.Clusters)
}

// section renders P8.
func (f *densityFigure) section() string {
	var b strings.Builder
	s := summarize(f.perCluster())
	fmt.Fprintf(&b, "## P8\n\nThe management plane's memory per hibernated cluster, %d clusters each created to run once (-density-ran): created awake with one worker "+
		"and wake on request, %d ConfigMaps of %d KiB of random bytes written into it through a minted kubeconfig once Ready, then hibernated; %s.\n\n",
		f.Clusters, densityConfigMaps, densityConfigMapLen>>10, f.ranLine())
	fmt.Fprintf(&b, "- measured: the PSS of the management plane's processes summed (%s; the tenants' datastore is `butler-localprovider etcd`), "+
		"read %d times over %s with nothing asked of it, with every cluster asleep, less the median of the same reads before the first cluster; per cluster\n",
		strings.Join(planeProcesses, ", "), len(f.PSSAfter), f.Idle)
	b.WriteString("- baseline: the same plane before its first cluster (nothing else does the same work: one run, not pairs; the spread is of the reads within the run)\n")
	fmt.Fprintf(&b, "- command: `make bench-report ONLY=P8` (`bench -density $(BENCH_P8_N) -density-ran`, 1,000 unless given), %d created in this run\n- commit: %s; machine: %s; started %s\n\n",
		f.Created, f.Commit, f.Machine, f.Started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "| | value |\n|---|---|\n| PSS per hibernated cluster, median (spread) | **%.2f MiB** (%.2f - %.2f) |\n", s.Median, s.Min, s.Max)
	fmt.Fprintf(&b, "| the plane's PSS before / with all asleep (medians) | %s / %s |\n", mib(medianBytes(f.PSSBefore)), mib(medianBytes(f.PSSAfter)))
	var growth []string
	for _, name := range planeProcesses {
		growth = append(growth, fmt.Sprintf("%s %.2f", name, float64(f.ProcessGrowth[name])/(1<<20)))
	}
	fmt.Fprintf(&b, "| PSS growth per cluster by process, MiB | %s |\n", strings.Join(growth, "; "))
	fmt.Fprintf(&b, "| idle CPU growth per cluster | %.4f%% of one core |\n", f.IdleCPUPercent)
	fmt.Fprintf(&b, "| created / hibernated; tenant processes left with all asleep | %d / %d; %d |\n", f.Created, f.Clusters, f.TenantProcesses)
	fmt.Fprintf(&b, "| endpoints held by a wake-on-request listener | %d |\n", f.Held)
	fmt.Fprintf(&b, "| one cluster create -> ran -> Hibernated (median); all | %s; %s |\n", secs(f.ToSleep), secs(f.AllAsleep))
	var wakes []string
	for _, w := range f.Wakes {
		wakes = append(wakes, secs(w))
	}
	fmt.Fprintf(&b, "| kubectl through a wake, afterwards (each; failed) | %s; %d |\n", strings.Join(wakes, ", "), f.WakeErrors)
	b.WriteString("\nAn awake cluster's own cost is P7's (its tenant processes and datastore share); asleep, a cluster has no process of its own.\n")
	return b.String()
}

// ranLine says how many of the clusters ran once.
func (f *densityFigure) ranLine() string {
	if f.Ran == 0 {
		return "how many of them ran before they slept was not counted in this run"
	}
	return fmt.Sprintf("%d of the %d ran once", f.Ran, f.Created)
}

func medianBytes(xs []int64) int64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return int64(median(f))
}

// loadDensity reads P8's file; nil when there is none.
func loadDensity(path string) (*densityFigure, error) {
	var f densityFigure
	if found, err := readJSON(path, &f); !found || err != nil {
		return nil, err
	}
	return &f, nil
}
