package addons

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
)

// The attacker's tests of issue 36: a Team's chart, restricted, tries to get past the privilege
// check (what the check reads differs from what Helm applies) or to take the controller down
// (chart loading and rendering). Each failed before the allow-list, the post-renderer and the
// chart budgets.

// serveCharts serves a Helm repository of the given charts (archives packaged by Helm, or raw
// .tgz bytes by file name) and returns its URL.
func serveCharts(t *testing.T, charts []*chart.Chart, raw map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for _, ch := range charts {
		if _, err := chartutil.Save(ch, dir); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range raw {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	index, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL
}

// attackChart is a chart "attack" at version whose templates (and other files, crds/ among
// them) are given by name.
func attackChart(version string, templates, files map[string]string) *chart.Chart {
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "attack", Version: version, Type: "application"}}
	for name, data := range templates {
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/" + name, Data: []byte(data)})
	}
	for name, data := range files {
		ch.Files = append(ch.Files, &chart.File{Name: name, Data: []byte(data)})
	}
	return ch
}

// attackEngine is the unit engine with a repository of the given charts; namespaces marked
// protected in the stand-in tenant are given by name.
func attackEngine(t *testing.T, charts []*chart.Chart, protected ...string) (*Engine, Request) {
	t.Helper()
	e, target, _, _ := unitEngine(t)
	url := serveCharts(t, charts, nil)
	e.charts.policy = allowing(url)
	e.charts.client = e.charts.policy.Client(time.Minute)
	setProtected(e, protected...)
	req := Request{Target: target, Release: ReleaseKey{Name: "attack", Namespace: "apps"}, Timeout: time.Minute,
		Chart: ChartRef{Repository: url, Name: "attack", Version: "0.1.0"}, Owner: "uid-1",
		Restriction: "a chart from a repository (not a platform AddonDefinition)"}
	return e, req
}

const clusterAdminBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: crb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: operator}]
`

// wantRefused fails unless err is the allow-list's refusal naming want.
func wantRefused(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "grants more than edit") || !strings.Contains(err.Error(), want) {
		t.Fatalf("Ensure = %v, want a refusal naming %q", err, want)
	}
}

// TestAttackCaseVariantRoleRef: a binding with both `roleRef` (cluster-admin, what
// kube-apiserver reads) and `roleref` (view, what encoding/json's case-insensitive keys let the
// checker read last) is refused.
func TestAttackCaseVariantRoleRef(t *testing.T) {
	e, req := attackEngine(t, []*chart.Chart{attackChart("0.1.0", map[string]string{"rbac.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: shadowed}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
roleref: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: operator}]
`}, nil)})
	_, err := e.Ensure(context.Background(), req, nil)
	wantRefused(t, err, "ClusterRoleBinding shadowed")
}

// TestAttackCRDsDirectory: Helm installs every file of crds/ as it is, whatever its kind, before
// it renders: a ClusterRoleBinding there is refused.
func TestAttackCRDsDirectory(t *testing.T) {
	e, req := attackEngine(t, []*chart.Chart{attackChart("0.1.0", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"},
		map[string]string{"crds/binding.yaml": clusterAdminBinding})})
	_, err := e.Ensure(context.Background(), req, nil)
	wantRefused(t, err, "ClusterRoleBinding crb binds ClusterRole cluster-admin")
}

// TestAttackTemplateNotNamedYAML: Helm installs a template whatever its name (all but NOTES.txt
// and partials): one named x.txt is checked too.
func TestAttackTemplateNotNamedYAML(t *testing.T) {
	e, req := attackEngine(t, []*chart.Chart{attackChart("0.1.0", map[string]string{"x.txt": clusterAdminBinding}, nil)})
	_, err := e.Ensure(context.Background(), req, nil)
	wantRefused(t, err, "ClusterRoleBinding crb binds ClusterRole cluster-admin")
}

// TestAttackUpgradeOnlyTemplate: a binding rendered only on upgrade ({{ if .Release.IsUpgrade }})
// is refused when the upgrade renders it; the installed release stays as it was.
func TestAttackUpgradeOnlyTemplate(t *testing.T) {
	e, req := attackEngine(t, []*chart.Chart{attackChart("0.1.0", map[string]string{
		"cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {v: {{ .Values.v | quote }}}\n",
		"later.yaml": "{{ if .Release.IsUpgrade }}\n" + clusterAdminBinding + "{{ end }}\n"}, nil)})
	ctx := context.Background()
	req.Values = Values{"v": "1"}
	if _, err := e.Ensure(ctx, req, nil); err != nil {
		t.Fatalf("install: %v", err)
	}
	req.Values = Values{"v": "2"}
	_, err := e.Ensure(ctx, req, nil)
	wantRefused(t, err, "ClusterRoleBinding crb binds ClusterRole cluster-admin")
	if got, _ := e.Get(ctx, req.Target, req.Release); got == nil || got.Revision != 1 || got.Status != "deployed" {
		t.Errorf("release after the refused upgrade: %+v", got)
	}
}

// TestAttackEditInKubeSystem: a RoleBinding of the built-in edit in kube-system (from there the
// clusterrole-aggregation-controller's account, which holds escalate, can be impersonated), of
// edit in a protected namespace, and of a role that reads Secrets, are refused; a chart's own
// role within bounds, bound in the release's namespace, installs.
func TestAttackEditInKubeSystem(t *testing.T) {
	binding := func(ns, kind, role string) map[string]any {
		return map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"metadata": map[string]any{"name": "b-" + role, "namespace": ns},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
			"subjects": []any{map[string]any{"kind": "User", "name": "operator"}}}
	}
	role := func(name string, resources ...any) map[string]any {
		return map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
			"metadata": map[string]any{"name": name},
			"rules":    []any{map[string]any{"apiGroups": []any{""}, "resources": resources, "verbs": []any{"get", "list"}}}}
	}
	e, target, _, _ := unitEngine(t)
	setProtected(e, "flux-system")
	req := unitRequest(target, "0.1.0", nil)
	req.Restriction = "a chart from a repository (not a platform AddonDefinition)"
	for _, c := range []struct {
		name    string
		objects []any
		want    string
	}{
		{"edit in kube-system", []any{binding("kube-system", "ClusterRole", "edit")}, "RoleBinding kube-system/b-edit is in kube-system, a system namespace"},
		{"edit in a protected namespace", []any{binding("flux-system", "ClusterRole", "edit")}, "RoleBinding flux-system/b-edit is in flux-system, a protected namespace"},
		{"edit in the release's namespace", []any{binding("", "ClusterRole", "edit")}, "RoleBinding apps/b-edit binds ClusterRole edit, which the chart does not define"},
		{"a role reading Secrets", []any{role("secrets", "secrets"), binding("", "Role", "secrets")}, "Role apps/secrets grants secrets"},
		{"a workload in kube-system", []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "d", "namespace": "kube-system"}}}, "Deployment kube-system/d is in kube-system"},
		{"a Namespace", []any{map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "mine"}}},
			"Namespace mine (v1) is not a kind a Team's chart may create"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req.Values = Values{"extraObjects": c.objects}
			_, err := e.Ensure(context.Background(), req, nil)
			wantRefused(t, err, c.want)
		})
	}
	req.Values = Values{"extraObjects": []any{role("pods", "pods"), binding("", "Role", "pods"), binding("", "ClusterRole", "view")}}
	if _, err := e.Ensure(context.Background(), req, nil); err != nil {
		t.Errorf("a chart's own role, bound in its namespace: %v", err)
	}
}

// tgz packs files (name -> content) into a gzipped tar under the top directory top.
func tgz(t *testing.T, top string, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: top + "/" + name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func chartYAML(name string) []byte {
	return []byte("apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n")
}

// TestAttackNestedArchiveBomb: nested chart archives each got a fresh decompression budget, so
// a few kilobytes of subchart archives decompressed to as much as the archive nests; and they
// nested without bound. Both are refused now, and the bad archive leaves the cache.
func TestAttackNestedArchiveBomb(t *testing.T) {
	zeros := make([]byte, 1<<20)
	sub := map[string][]byte{"Chart.yaml": chartYAML("sub")}
	for i := range 12 {
		sub[fmt.Sprintf("files/%d", i)] = zeros
	}
	bomb := map[string][]byte{"Chart.yaml": chartYAML("bomb")}
	for i := range 3 { // 3 x 12 MiB
		bomb[fmt.Sprintf("charts/sub%d-0.1.0.tgz", i)] = tgz(t, "sub", sub)
	}
	deep := tgz(t, "d", map[string][]byte{"Chart.yaml": chartYAML("d")})
	for range 6 {
		deep = tgz(t, "d", map[string][]byte{"Chart.yaml": chartYAML("d"), "charts/d-0.1.0.tgz": deep})
	}
	archives := map[string][]byte{"bomb": tgz(t, "bomb", bomb), "d": deep}
	// The archives are in the cache already, as if fetched: Load reads them from there.
	const url = "https://charts.example"
	charts, err := NewCharts(t.TempDir(), 0, FetchPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, want string }{
		{"bomb", "the chart decompresses to more than 33554432 bytes, nested archives included"},
		{"d", "chart archives nest deeper than 4"},
	} {
		path := charts.archivePath(ChartRef{Repository: url, Name: c.name, Version: "0.1.0"})
		if err := writeAtomic(path, archives[c.name]); err != nil {
			t.Fatal(err)
		}
		_, err := charts.Load(context.Background(), ChartRef{Repository: url, Name: c.name, Version: "0.1.0"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Load = %v, want %q", c.name, err, c.want)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the archive stays in the cache: %v", c.name, err)
		}
	}
}

// TestAttackRenderThatDoesNotEnd: a template that loops (for seconds here; forever as well) is
// given up at the render deadline: Ensure returns, the chart is dropped from the cache, and the
// same chart and values are not rendered again.
func TestAttackRenderThatDoesNotEnd(t *testing.T) {
	e, req := attackEngine(t, []*chart.Chart{attackChart("0.1.0", map[string]string{
		"loop.yaml": "{{ range 20000 }}{{ range 1000 }}{{ end }}{{ end }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"}, nil)})
	setRenderDeadline(e, 100*time.Millisecond)
	started := time.Now()
	_, err := e.Ensure(context.Background(), req, nil)
	if took := time.Since(started); took > 5*time.Second {
		t.Fatalf("Ensure took %s (%v): the render has no deadline", took, err)
	}
	if err == nil || !strings.Contains(err.Error(), "rendering did not end within 100ms") {
		t.Fatalf("Ensure = %v", err)
	}
	if _, err := os.Stat(e.charts.archivePath(req.Chart)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the chart stays in the cache: %v", err)
	}
	started = time.Now()
	_, err = e.Ensure(context.Background(), req, nil)
	if err == nil || !strings.Contains(err.Error(), "is not rendered again") || time.Since(started) > time.Second {
		t.Errorf("again: %v after %s", err, time.Since(started))
	}
	// The abandoned render is counted until it ends (this one does, in a few seconds; Go
	// cannot stop one that does not).
	if n := e.abandonedRenders(); n != 1 {
		t.Errorf("%d abandoned renders, want 1", n)
	}
	for deadline := time.Now().Add(time.Minute); e.abandonedRenders() > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if n := e.abandonedRenders(); n != 0 {
		t.Errorf("%d abandoned renders after the loop ended", n)
	}
}

// TestAttackNestedArchiveInDirectorySubchart: a subchart shipped as a directory
// (charts/sub/) with archives of its own (charts/sub/charts/x.tgz) left them to Helm's
// loader, which expands them with a fresh budget.
func TestAttackNestedArchiveInDirectorySubchart(t *testing.T) {
	zeros := make([]byte, 1<<20)
	sub := map[string][]byte{"Chart.yaml": chartYAML("sub")}
	for i := range 12 {
		sub[fmt.Sprintf("files/%d", i)] = zeros
	}
	dir := map[string][]byte{"Chart.yaml": chartYAML("dir"), "charts/mid/Chart.yaml": chartYAML("mid")}
	for i := range 3 { // 3 x 12 MiB
		dir[fmt.Sprintf("charts/mid/charts/sub%d-0.1.0.tgz", i)] = tgz(t, "sub", sub)
	}
	charts, err := NewCharts(t.TempDir(), 0, FetchPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	ref := ChartRef{Repository: "https://charts.example", Name: "dir", Version: "0.1.0"}
	if err := writeAtomic(charts.archivePath(ref), tgz(t, "dir", dir)); err != nil {
		t.Fatal(err)
	}
	_, err = charts.Load(context.Background(), ref)
	if want := "the chart decompresses to more than 33554432 bytes"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load = %v, want %q", err, want)
	}
}
