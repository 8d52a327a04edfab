package addons

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
)

const testCharts = "../../test/testdata/charts"

// chartRepo serves a Helm repository on loopback: the named test charts packaged by Helm at
// the given versions, and an index.yaml made by Helm's indexer. It counts requests per path.
func chartRepo(t *testing.T, charts map[string][]string) (string, *sync.Map) {
	t.Helper()
	dir := t.TempDir()
	for name, versions := range charts {
		for _, v := range versions {
			ch, err := loader.LoadDir(filepath.Join(testCharts, name))
			if err != nil {
				t.Fatal(err)
			}
			ch.Metadata.Version = v
			if _, err := chartutil.Save(ch, dir); err != nil {
				t.Fatal(err)
			}
		}
	}
	hits := &sync.Map{}
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := hits.LoadOrStore(r.URL.Path, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	index, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL, hits
}

func hitCount(hits *sync.Map, path string) int32 {
	n, ok := hits.Load(path)
	if !ok {
		return 0
	}
	return n.(*atomic.Int32).Load()
}

func TestChartsFromHTTPRepository(t *testing.T) {
	url, hits := chartRepo(t, map[string][]string{"demo": {"0.1.0", "0.2.0", "1.0.0"}})
	charts, err := NewCharts(t.TempDir(), 0, allowing(url))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ version, want string }{
		{"", "1.0.0"},
		{"0.1.0", "0.1.0"},
		{"~0.2", "0.2.0"},
		{"<1.0.0", "0.2.0"},
	} {
		got, err := charts.Resolve(ctx, ChartRef{Repository: url, Name: "demo", Version: tc.version})
		if err != nil {
			t.Fatalf("Resolve(%q): %v", tc.version, err)
		}
		if got != tc.want {
			t.Errorf("Resolve(%q) = %s, want %s", tc.version, got, tc.want)
		}
	}
	if n := hitCount(hits, "/index.yaml"); n != 3 {
		t.Errorf("the index was read %d times for 3 constraints (an exact version needs none)", n)
	}

	ref := ChartRef{Repository: url + "/", Name: "demo", Version: "0.2.0"}
	for range 2 {
		ch, err := charts.Load(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if ch.Metadata.Name != "demo" || ch.Metadata.Version != "0.2.0" {
			t.Fatalf("loaded %s %s", ch.Metadata.Name, ch.Metadata.Version)
		}
	}
	if n := hitCount(hits, "/demo-0.2.0.tgz"); n != 1 {
		t.Errorf("the archive was downloaded %d times; the disk cache should serve the second load", n)
	}

	if _, err := charts.Resolve(ctx, ChartRef{Repository: url, Name: "demo", Version: "~3.0"}); err == nil ||
		!strings.Contains(err.Error(), "no chart version found") {
		t.Errorf("a version the index lacks: %v", err)
	}
	if _, err := charts.Resolve(ctx, ChartRef{Repository: url, Name: "nosuchchart"}); err == nil {
		t.Error("a chart the index lacks resolved")
	}
}

func TestChartsCheckTheIndexDigest(t *testing.T) {
	url, _ := chartRepo(t, map[string][]string{"demo": {"0.1.0"}})
	// A second repository whose index points at the first one's archive with a wrong digest.
	dir := t.TempDir()
	index := repo.NewIndexFile()
	if err := index.MustAdd(&chart.Metadata{APIVersion: "v2", Name: "demo", Version: "0.1.0"}, "demo-0.1.0.tgz", url, "sha256:0000"); err != nil {
		t.Fatal(err)
	}
	index.Entries["demo"][0].Digest = strings.Repeat("0", 64)
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	charts, err := NewCharts(t.TempDir(), 0, FetchPolicy{Allowed: AllowHostPorts([]string{srv.URL, url})})
	if err != nil {
		t.Fatal(err)
	}
	_, err = charts.Load(context.Background(), ChartRef{Repository: srv.URL, Name: "demo", Version: "0.1.0"})
	if err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("an archive that does not match the index's digest was loaded: %v", err)
	}
}

func TestChartsFromLocalPath(t *testing.T) {
	charts, err := NewCharts(t.TempDir(), 0, FetchPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref := ChartRef{Repository: testCharts, Name: "demo"}
	v, err := charts.Resolve(ctx, ref)
	if err != nil || v != "0.1.0" {
		t.Fatalf("Resolve = %q, %v", v, err)
	}
	ref.Version = v
	ch, err := charts.Load(ctx, ref)
	if err != nil || ch.Metadata.Name != "demo" {
		t.Fatalf("Load: %v", err)
	}
	ref.Version = "9.9.9"
	if _, err := charts.Load(ctx, ref); err == nil {
		t.Error("a local chart loaded at a version it does not have")
	}

	// A packaged archive next to the directories is found by name and version.
	dir := t.TempDir()
	src, err := loader.LoadDir(filepath.Join(testCharts, "demo"))
	if err != nil {
		t.Fatal(err)
	}
	src.Metadata.Version = "0.3.0"
	if _, err := chartutil.Save(src, dir); err != nil {
		t.Fatal(err)
	}
	ch, err = charts.Load(ctx, ChartRef{Repository: dir, Name: "demo", Version: "0.3.0"})
	if err != nil || ch.Metadata.Version != "0.3.0" {
		t.Fatalf("Load of a packaged local chart: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "demo-0.3.0.tgz")); err != nil {
		t.Fatal(err)
	}
}

func TestChartSourceKinds(t *testing.T) {
	for repo, want := range map[string]sourceKind{
		"https://charts.example.com": sourceHTTP, "http://127.0.0.1:8080/x": sourceHTTP,
		"oci://ghcr.io/org/charts": sourceOCI, "/opt/butler/charts": sourceLocal, "charts": sourceLocal,
	} {
		got, err := kindOf(repo)
		if err != nil || got != want {
			t.Errorf("kindOf(%q) = %v, %v; want %v", repo, got, err, want)
		}
	}
	if _, err := kindOf("git://example.com/x"); err == nil {
		t.Error("git:// accepted")
	}
	if got := ociRef(ChartRef{Repository: "oci://ghcr.io/org/charts/", Name: "demo"}); got != "ghcr.io/org/charts/demo" {
		t.Errorf("ociRef = %s", got)
	}
}
