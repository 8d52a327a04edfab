package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// clientRequests is what butler-apiserver's clients sent (its rest_client_* metrics): the
// controllers' requests to kube-apiserver and to butler-apiserver's own loopback.
type clientRequests struct {
	// writes counts POST, PUT, PATCH and DELETE by host; reads the rest.
	writes, reads map[string]float64
	// throttled is the time requests waited in the client-side rate limiter, in seconds.
	throttled float64
	// applies and unchanged count the controllers' applies of external objects, and those of them
	// that changed nothing (butler_workers_applies_total).
	applies, unchanged float64
}

func (c clientRequests) total(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

// sub is c minus an earlier reading.
func (c clientRequests) sub(before clientRequests) clientRequests {
	out := clientRequests{writes: map[string]float64{}, reads: map[string]float64{}, throttled: c.throttled - before.throttled,
		applies: c.applies - before.applies, unchanged: c.unchanged - before.unchanged}
	for h, v := range c.writes {
		out.writes[h] = v - before.writes[h]
	}
	for h, v := range c.reads {
		out.reads[h] = v - before.reads[h]
	}
	return out
}

// byHost says the writes per host, divided by n.
func (c clientRequests) byHost(n int) string {
	var parts []string
	for h, v := range c.writes {
		parts = append(parts, fmt.Sprintf("%s %.1f", h, v/float64(n)))
	}
	return strings.Join(parts, ", ")
}

// scrapeClientRequests reads butler-apiserver's /metrics.
func (p *plane) scrapeClientRequests(ctx context.Context) (clientRequests, error) {
	out := clientRequests{writes: map[string]float64{}, reads: map[string]float64{}}
	err := scrapeMetrics(ctx, p.direct, func(name string, labels map[string]string, value float64) {
		switch name {
		case "rest_client_requests_total":
			switch labels["method"] {
			case "POST", "PUT", "PATCH", "DELETE":
				out.writes[labels["host"]] += value
			default:
				out.reads[labels["host"]] += value
			}
		case "rest_client_rate_limiter_duration_seconds_sum":
			out.throttled += value
		case "butler_workers_applies_total":
			out.applies += value
			if labels["changed"] == "false" {
				out.unchanged += value
			}
		}
	})
	return out, err
}

// scrapeMetrics calls each for every sample of the server's /metrics.
func scrapeMetrics(ctx context.Context, config *rest.Config, each func(name string, labels map[string]string, value float64)) error {
	hc, err := httpClient(config)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, config.Host+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/metrics: %s", config.Host, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if name, labels, value, ok := metricLine(sc.Text()); ok {
			each(name, labels, value)
		}
	}
	return sc.Err()
}

// metricLine parses `name{k="v",...} value` of the Prometheus text format.
func metricLine(line string) (name string, labels map[string]string, value float64, ok bool) {
	if strings.HasPrefix(line, "#") {
		return "", nil, 0, false
	}
	open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	if open < 0 || end < open {
		return "", nil, 0, false
	}
	name, labels = line[:open], map[string]string{}
	for _, kv := range strings.Split(line[open+1:end], ",") {
		k, v, found := strings.Cut(kv, "=")
		if found {
			labels[k] = strings.Trim(v, `"`)
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
	return name, labels, v, err == nil
}

// flowRequests is what kube-apiserver executed per API Priority and Fairness flow schema (whose
// requests: butler's ServiceAccount, Cluster API's manager, kube-controller-manager, the bench
// as admin): requests and the seconds they executed, from its
// apiserver_flowcontrol_request_execution_seconds.
type flowRequests map[string]struct{ count, seconds float64 }

func (p *plane) scrapeFlows(ctx context.Context) (flowRequests, error) {
	out := flowRequests{}
	err := scrapeMetrics(ctx, p.kube, func(name string, labels map[string]string, value float64) {
		f := out[labels["flow_schema"]]
		switch name {
		case "apiserver_flowcontrol_request_execution_seconds_count":
			f.count += value
		case "apiserver_flowcontrol_request_execution_seconds_sum":
			f.seconds += value
		default:
			return
		}
		out[labels["flow_schema"]] = f
	})
	return out, err
}

// sub renders f minus an earlier reading, the longest-executing flow schema first.
func (f flowRequests) sub(before flowRequests) string {
	type row struct {
		name           string
		count, seconds float64
	}
	var rows []row
	for name, v := range f {
		if r := (row{name, v.count - before[name].count, v.seconds - before[name].seconds}); r.count > 0 {
			rows = append(rows, r)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].seconds > rows[j].seconds })
	var parts []string
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%s %.0f requests, %.1f s", r.name, r.count, r.seconds))
	}
	return strings.Join(parts, "; ")
}
