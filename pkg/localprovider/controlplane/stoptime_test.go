package controlplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

// TestTenantStopTime starts BUTLER_STOP_RUNS (1) tenant control planes one after the other the
// way TestTenantFootprint does (this provider's command lines, environment and credentials on a
// datastore like its own), lets each run BUTLER_STOP_SETTLE (20s) with a client's watches open
// over HTTP/2 (as Cluster API's cluster cache and butler's clients hold theirs), and times the
// plane's stop: the whole of plane.stop and each process's exit after it began. It is a
// measurement, not a test: it runs only when BUTLER_STOP_BIN names a directory with
// kube-apiserver, kube-controller-manager, kube-scheduler and butler-localprovider. Each run's
// seconds are appended to BUTLER_STOP_OUT as "label total apiserver controller-manager
// scheduler", label being BUTLER_STOP_LABEL: built at two commits, the pairs compare them.
func TestTenantStopTime(t *testing.T) {
	bin := os.Getenv("BUTLER_STOP_BIN")
	if bin == "" {
		t.Skip("a measurement: set BUTLER_STOP_BIN (see the comment)")
	}
	settle := 20 * time.Second
	if v := os.Getenv("BUTLER_STOP_SETTLE"); v != "" {
		var err error
		if settle, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ds, stopDS := footprintDataStore(t, ctx, bin, filepath.Join(dir, "datastore"), false)
	defer stopDS()
	for i := range envInt("BUTLER_STOP_RUNS", 1) {
		ft := startFootprintTenant(t, ctx, bin, dir, ds, i, false)
		watches := holdWatches(t, ft)
		time.Sleep(settle)
		stopOnce(t, ft, filepath.Join(dir, fmt.Sprintf("tenant-%d", i)), watches)
	}
}

// stopOnce stops ft's processes as plane.stop does and prints and records how long it took.
func stopOnce(t *testing.T, ft *footprintTenant, dir string, watches *sync.WaitGroup) {
	pl := &plane{paths: tenantPaths{dir: dir}, notify: func() {}, procs: map[string]*process.Process{}}
	exited := map[string]chan time.Duration{}
	start := time.Now()
	for _, p := range ft.procs {
		name := p.Spec().Component
		pl.procs[name] = p
		pl.components = append(pl.components, name)
		ch := make(chan time.Duration, 1)
		exited[name] = ch
		go func(pid int) {
			for process.Alive(pid, "") {
				time.Sleep(5 * time.Millisecond)
			}
			ch <- time.Since(start)
		}(pidOf(p))
	}
	pl.stop()
	total := time.Since(start)
	watches.Wait()
	secs := func(name string) float64 { return (<-exited[name]).Seconds() }
	api, kcm, sched := secs(componentAPIServer), secs(componentControllerManager), secs(componentScheduler)
	label := os.Getenv("BUTLER_STOP_LABEL")
	fmt.Printf("STOP %s total=%.2fs exited after: kube-apiserver=%.2fs kube-controller-manager=%.2fs kube-scheduler=%.2fs\n", label, total.Seconds(), api, kcm, sched)
	for _, c := range []string{componentControllerManager, componentAPIServer} {
		for _, line := range shutdownLines(filepath.Join(dir, c+".log")) {
			fmt.Printf("STOP %s %s: %s\n", label, c, line)
		}
	}
	if out := os.Getenv("BUTLER_STOP_OUT"); out != "" {
		f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fmt.Fprintf(f, "%s\t%.2f\t%.2f\t%.2f\t%.2f\n", label, total.Seconds(), api, kcm, sched)
	}
}

// holdWatches opens two watches on kube-apiserver over one HTTP/2 connection, as client-go's
// informers do, and keeps reading them; the WaitGroup is done when the server has ended both.
func holdWatches(t *testing.T, ft *footprintTenant) *sync.WaitGroup {
	tr := ft.client.Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = true
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for _, path := range []string{"/api/v1/configmaps", "/api/v1/nodes"} {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d%s?watch=1&allowWatchBookmarks=true", ft.port, path))
		if err != nil {
			t.Logf("watch %s: %v", path, err)
			continue
		}
		fmt.Printf("STOP watch %s: %s over %s\n", path, resp.Status, resp.Proto)
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
	}
	return &wg
}

// shutdownLines are the lines of a component's log that say what its shutdown waited for.
func shutdownLines(log string) []string {
	data, _ := os.ReadFile(log)
	re := regexp.MustCompile(`Still waiting|shutdown timeout|All controllers terminated|Failed to shutdown server|graceful-termination|Stopped listening|Shutting down kubernetes service`)
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if re.MatchString(line) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}
