package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
)

// P7: the capacity run's clusters held awake for -capacity-hold, every tenant's /readyz asked once
// a minute, then their memory (PSS, the datastore counted) and idle CPU. Issue 40's goal: 100
// awake tenant control planes on this machine for 10 minutes at 200 MiB or less each, every one
// answering each minute.

// readyzMinute is one round of /readyz asked of every held tenant.
type readyzMinute struct {
	At       time.Duration `json:"at"` // since the hold began
	Asked    int           `json:"asked"`
	Answered int           `json:"answered"` // 200 within readyzTimeout
	Slowest  time.Duration `json:"slowest"`
	Failures []string      `json:"failures,omitempty"` // the first few, "cluster: error"
}

// holdGoal is P7 as the report renders it: a goal checked, not a ratio (nothing does the same
// work without the subject), kept in test/bench/figures/goals/P7.json.
type holdGoal struct {
	Clusters       int            `json:"clusters"`
	Held           time.Duration  `json:"held"`
	Minutes        []readyzMinute `json:"minutes"`
	PSSPerTenant   int64          `json:"pssPerTenant"`   // bytes: tenants' processes and their datastore, over the clusters
	IdleCPUPercent float64        `json:"idleCpuPercent"` // the tenants' processes' CPU per tenant over the hold, % of one core (the datastore's not counted)
	MemAvailable   int64          `json:"memAvailable"`
	Commit         string         `json:"commit"`
	Machine        string         `json:"machine"`
	Started        time.Time      `json:"started"`
}

const readyzTimeout = 10 * time.Second

// hold asks every held cluster's /readyz once a minute for o.hold, then measures them.
func hold(ctx context.Context, butler clientset.Interface, p *plane, plane map[string]int, o localOptions) (holdGoal, error) {
	g := holdGoal{Held: o.hold, Started: time.Now(), Machine: machine()}
	endpoints, err := heldEndpoints(ctx, butler)
	if err != nil {
		return g, err
	}
	g.Clusters = len(endpoints)
	cpuBefore := tenantsCPU(p)
	client := &http.Client{Timeout: readyzTimeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}} // a liveness probe on loopback
	for at := time.Duration(0); at < o.hold; at += time.Minute {
		round := askReadyz(ctx, client, endpoints)
		round.At = time.Since(g.Started).Round(time.Second)
		g.Minutes = append(g.Minutes, round)
		logf("hold %s: %d of %d tenants answered /readyz (slowest %s)", round.At, round.Answered, round.Asked, round.Slowest.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return g, ctx.Err()
		case <-time.After(time.Until(g.Started.Add(at + time.Minute))):
		}
	}
	held := time.Since(g.Started)
	// The tenants' CPU over the whole hold: their periodic work runs every few seconds to every
	// few minutes, which a short window would catch or miss by chance.
	g.IdleCPUPercent = 100 * (tenantsCPU(p) - cpuBefore).Seconds() / held.Seconds() / float64(max(g.Clusters, 1))
	row := measureCapacity(p, plane, 0)
	g.PSSPerTenant = row.tenantsPSS / int64(max(g.Clusters, 1))
	g.MemAvailable = row.available
	return g, nil
}

// tenantsCPU is the CPU time of every tenant process now alive.
func tenantsCPU(p *plane) time.Duration {
	tenants, _ := p.tenantProcesses()
	var sum time.Duration
	for _, pids := range tenants {
		sum += cpuOf(pids)
	}
	return sum
}

// cpuOf is the CPU time the processes pids have used, those gone counted as none.
func cpuOf(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		t, _ := cpuTime(pid)
		sum += t
	}
	return sum
}

// heldEndpoints are the capacity run's clusters' endpoints, by cluster.
func heldEndpoints(ctx context.Context, butler clientset.Interface) (map[string]string, error) {
	list, err := butler.ButlerV1alpha1().TenantClusters(localNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, tc := range list.Items {
		if strings.HasPrefix(tc.Name, "cap-") && tc.Status.ControlPlaneEndpoint != "" {
			out[tc.Name] = tc.Status.ControlPlaneEndpoint
		}
	}
	return out, nil
}

// askReadyz asks each endpoint's /readyz, eight at a time.
func askReadyz(ctx context.Context, client *http.Client, endpoints map[string]string) readyzMinute {
	var (
		mu    sync.Mutex
		round = readyzMinute{Asked: len(endpoints)}
		wg    sync.WaitGroup
		slots = make(chan struct{}, 8)
	)
	for name, ep := range endpoints {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			start := time.Now()
			err := readyz(ctx, client, ep)
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			round.Slowest = max(round.Slowest, took)
			if err == nil {
				round.Answered++
			} else if len(round.Failures) < 5 {
				round.Failures = append(round.Failures, fmt.Sprintf("%s: %v", name, err))
			}
		}()
	}
	wg.Wait()
	return round
}

func readyz(ctx context.Context, client *http.Client, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+endpoint+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %d", resp.StatusCode)
	}
	return nil
}

// met says whether the hold meets issue 40's goal, and if not why.
func (g holdGoal) met(wantClusters int, wantHeld time.Duration, maxPSS int64) (bool, string) {
	var why []string
	if g.Clusters < wantClusters {
		why = append(why, fmt.Sprintf("%d clusters held, %d wanted", g.Clusters, wantClusters))
	}
	if g.Held < wantHeld {
		why = append(why, fmt.Sprintf("held %s, %s wanted", g.Held, wantHeld))
	}
	for _, m := range g.Minutes {
		if m.Answered < m.Asked {
			why = append(why, fmt.Sprintf("at %s only %d of %d answered /readyz", m.At, m.Answered, m.Asked))
			break
		}
	}
	if g.PSSPerTenant > maxPSS {
		why = append(why, fmt.Sprintf("%s a tenant, over %s", mib(g.PSSPerTenant), mib(maxPSS)))
	}
	return len(why) == 0, strings.Join(why, "; ")
}

// markdown is the hold's section of the capacity run's file.
func (g holdGoal) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Held awake\n\n%d clusters held for %s, every tenant's /readyz asked once a minute (%s timeout), %d cores:\n\n"+
		"| at | answered | slowest | failures |\n|---|---|---|---|\n", g.Clusters, g.Held, readyzTimeout, runtime.NumCPU())
	for _, m := range g.Minutes {
		fmt.Fprintf(&b, "| %s | %d of %d | %s | %s |\n", m.At, m.Answered, m.Asked, m.Slowest.Round(time.Millisecond), strings.Join(m.Failures, "; "))
	}
	fmt.Fprintf(&b, "\nIdle CPU over the hold %.2f%% of one core a tenant (its three processes); then %s a tenant (PSS of its three processes and its share of the datastore's), MemAvailable %s.\n",
		g.IdleCPUPercent, mib(g.PSSPerTenant), mib(g.MemAvailable))
	return b.String()
}

// Issue 40's goals for an awake tenant.
const (
	goalClusters  = 100
	goalHeld      = 10 * time.Minute
	goalPSS       = 200 << 20
	goalCreateSec = 2.0
)

// verdict is the hold's row in the report's table.
func (g holdGoal) verdict() string {
	if ok, why := g.met(goalClusters, goalHeld, goalPSS); !ok {
		return "goal not met: " + why
	}
	return fmt.Sprintf("goal met: %d held %s, %s each", g.Clusters, g.Held, mib(g.PSSPerTenant))
}

// loadGoal reads a goal's file; nil when there is none.
func loadGoal(path string) (*holdGoal, error) {
	var g holdGoal
	if found, err := readJSON(path, &g); !found || err != nil {
		return nil, err
	}
	return &g, nil
}

// goalsSection renders issue 40's two goals for an awake tenant: P6's create median, and P7's hold.
func goalsSection(p6 *figure, p7 *holdGoal) string {
	var b strings.Builder
	b.WriteString("\n## Goals\n\nIssue 40's goals for an awake local tenant, checked against the runs above rather than against a baseline:\n\n" +
		"| goal | measured | met |\n|---|---|---|\n")
	create := "not measured"
	createMet := "no"
	if p6 != nil && len(p6.Runs) > 0 {
		s := summarize(p6.subjects())
		create = fmt.Sprintf("median %.2f s (%.2f - %.2f, %d runs; [P6](#p6), commit %s)", s.Median, s.Min, s.Max, s.N, p6.Commit)
		if s.Median <= goalCreateSec {
			createMet = "yes"
		}
	}
	fmt.Fprintf(&b, "| create -> control plane Ready of a local TenantCluster (with one spare control plane: P6; without, P6c), median %.0f s or less | %s | %s |\n", goalCreateSec, create, createMet)
	hold, holdMet := "not measured", "no"
	if p7 != nil {
		answered := 0
		for _, m := range p7.Minutes {
			if m.Answered == m.Asked {
				answered++
			}
		}
		hold = fmt.Sprintf("%d held %s; every tenant answered /readyz in %d of %d minutes; %s a tenant (PSS with the datastore's share); idle CPU over the hold %.2f%% of a core a tenant (its processes); MemAvailable %s after (commit %s, %s)",
			p7.Clusters, p7.Held, answered, len(p7.Minutes), mib(p7.PSSPerTenant), p7.IdleCPUPercent, mib(p7.MemAvailable), p7.Commit, p7.Started.UTC().Format("2006-01-02 15:04 UTC"))
		if ok, why := p7.met(goalClusters, goalHeld, goalPSS); ok {
			holdMet = "yes"
		} else {
			holdMet = "no: " + why
		}
	}
	fmt.Fprintf(&b, "| %d awake local tenant control planes held %.0f minutes, %s or less each, every one answering /readyz each minute | %s | %s |\n",
		goalClusters, goalHeld.Minutes(), mib(goalPSS), hold, holdMet)
	fmt.Fprintf(&b, "\nP7's command: `make bench-report ONLY=P7` (`bench -capacity %d -capacity-workers 0 -capacity-hold 10m`).\n", goalClusters)
	return b.String()
}
