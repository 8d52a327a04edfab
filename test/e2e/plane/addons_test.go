package plane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// These tests drive pkg/addons with real Helm against the management plane's kube-apiserver,
// which stands in for a tenant cluster, installing charts from a repository the test serves
// itself on loopback (test/testdata/charts, packaged and indexed by Helm's own code).

// addonChartRepo serves a Helm repository with the given test charts at the given versions.
func addonChartRepo(t *testing.T, charts map[string][]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, versions := range charts {
		for _, v := range versions {
			ch, err := loader.LoadDir(filepath.Join("..", "..", "testdata", "charts", name))
			if err != nil {
				t.Fatal(err)
			}
			ch.Metadata.Version = v
			if _, err := chartutil.Save(ch, dir); err != nil {
				t.Fatal(err)
			}
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

// addonEngine is an engine with its own chart cache, and the management cluster as a target.
// The repository on loopback is allowed by its host:port, as the platform would allow it.
func addonEngine(t *testing.T, cluster, repository string) (*addons.Engine, addons.Target) {
	t.Helper()
	charts, err := addons.NewCharts(t.TempDir(), 0, addons.FetchPolicy{Allowed: addons.AllowHostPorts([]string{repository})})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := os.ReadFile(framework.Plane.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return addons.NewEngine(charts), addons.Target{Cluster: cluster, Kubeconfig: kubeconfig}
}

// addonNamespace names a namespace the releases of one test go to (Helm creates it) and
// deletes it afterwards.
func addonNamespace(t *testing.T, name string) string {
	t.Helper()
	t.Cleanup(func() {
		_ = framework.Plane.Kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// helmValues reads a release's user-supplied values as `helm get values` does, through a
// Helm Configuration of its own (not the engine's).
func helmValues(t *testing.T, namespace, release string) map[string]any {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &framework.Plane.Kubeconfig, &namespace
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, namespace, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	vals, err := action.NewGetValues(cfg).Run(release)
	if err != nil {
		t.Fatalf("helm get values %s: %v", release, err)
	}
	return vals
}

// renderedValues reads the values the demo chart rendered into its ConfigMap.
func renderedValues(t *testing.T, namespace, release string) (map[string]any, map[string]string) {
	t.Helper()
	cm, err := framework.Plane.Kube.CoreV1().ConfigMaps(namespace).Get(context.Background(), release+"-rendered", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the rendered ConfigMap: %v", err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(cm.Data["values.json"]), &v); err != nil {
		t.Fatal(err)
	}
	return v, cm.Data
}

func TestAddonsHelmLifecycle(t *testing.T) {
	url := addonChartRepo(t, map[string][]string{"demo": {"0.1.0", "0.2.0"}, "broken": {"0.1.0"}})
	engine, target := addonEngine(t, "e2e/lifecycle", url)
	ns := addonNamespace(t, "addons-e2e")
	ctx := context.Background()
	key := addons.ReleaseKey{Name: "demo", Namespace: ns}

	// The three layers: the AddonDefinition's defaults, the cluster's slot, the TenantAddon's.
	definition := addons.Values{"greeting": "from-definition", "layers": map[string]any{"definition": true}, "size": 1}
	slot := addons.Values{"layers": map[string]any{"cluster": true}, "size": 2, "cluster": "c1"}
	own := addons.Values{"greeting": "from-addon", "layers": map[string]any{"addon": true}}
	merged, err := addons.Merge(definition, slot, own)
	if err != nil {
		t.Fatal(err)
	}
	req := addons.Request{Target: target, Release: key, CreateNamespace: true, Wait: true, Timeout: time.Minute, Owner: "uid-1",
		Chart: addons.ChartRef{Repository: url, Name: "demo", Version: "0.1.0"}, Values: merged}

	var started []addons.Action
	began := time.Now()
	res, err := engine.Ensure(ctx, req, func(a addons.Action) { started = append(started, a) })
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	t.Logf("install of demo 0.1.0 from the loopback repository took %s", time.Since(began).Round(time.Millisecond))
	if res.Action != addons.ActionInstall || res.Release.Revision != 1 || res.Release.Status != "deployed" ||
		res.Release.ChartVersion != "0.1.0" || !reflect.DeepEqual(started, []addons.Action{addons.ActionInstall}) {
		t.Fatalf("install result = %+v, started %v", res, started)
	}

	t.Run("values from all three layers are in the release", func(t *testing.T) {
		want := map[string]any{"greeting": "from-addon", "size": float64(2), "cluster": "c1",
			"layers": map[string]any{"definition": true, "cluster": true, "addon": true}}
		if got := helmValues(t, ns, "demo"); !reflect.DeepEqual(got, want) {
			t.Errorf("helm get values = %v, want %v", got, want)
		}
		rendered, data := renderedValues(t, ns, "demo")
		// Rendered: the chart's own defaults under the three layers.
		if data["greeting"] != "from-addon" || data["chartVersion"] != "0.1.0" {
			t.Errorf("rendered ConfigMap = %v", data)
		}
		if l := rendered["layers"].(map[string]any); l["chart"] != true || l["definition"] != true || l["cluster"] != true || l["addon"] != true {
			t.Errorf("rendered layers = %v", l)
		}
		if res.Release.ValuesHash != addons.Hash(want) {
			t.Errorf("the release's values hash %s is not the hash of its values", res.Release.ValuesHash)
		}
	})

	t.Run("the same request changes nothing", func(t *testing.T) {
		res, err := engine.Ensure(ctx, req, func(a addons.Action) { t.Errorf("%s started for an unchanged release", a) })
		if err != nil || res.Action != addons.ActionUnchanged || res.Release.Revision != 1 {
			t.Fatalf("Ensure = %+v, %v", res, err)
		}
	})

	t.Run("a version change upgrades", func(t *testing.T) {
		up := req
		up.Chart.Version = "0.2.0"
		res, err := engine.Ensure(ctx, up, nil)
		if err != nil || res.Action != addons.ActionUpgrade || res.Release.Revision != 2 || res.Release.ChartVersion != "0.2.0" {
			t.Fatalf("Ensure = %+v, %v", res, err)
		}
		if _, data := renderedValues(t, ns, "demo"); data["chartVersion"] != "0.2.0" {
			t.Errorf("the ConfigMap still says %s", data["chartVersion"])
		}
		req = up
	})

	t.Run("a values change upgrades", func(t *testing.T) {
		up := req
		up.Values, _ = addons.Merge(merged, addons.Values{"greeting": "changed"})
		res, err := engine.Ensure(ctx, up, nil)
		if err != nil || res.Action != addons.ActionUpgrade || res.Release.Revision != 3 {
			t.Fatalf("Ensure = %+v, %v", res, err)
		}
		if _, data := renderedValues(t, ns, "demo"); data["greeting"] != "changed" {
			t.Errorf("greeting = %s", data["greeting"])
		}
		req = up
	})

	t.Run("a failed upgrade is rolled back and reported with Helm's message", func(t *testing.T) {
		bad := req
		bad.Values, _ = addons.Merge(req.Values, addons.Values{"nameOverride": "Not_A_Valid_Name"})
		_, err := engine.Ensure(ctx, bad, nil)
		var op *addons.OperationError
		if !errors.As(err, &op) || op.Action != addons.ActionUpgrade || !op.RolledBack {
			t.Fatalf("Ensure error = %v", err)
		}
		if !strings.Contains(err.Error(), "Not_A_Valid_Name") || !strings.Contains(err.Error(), "invalid") {
			t.Errorf("the error lacks the API server's reason: %v", err)
		}
		// Revision 4 failed, revision 5 is the rollback to 3: the previous values run again.
		if op.Release == nil || op.Release.Revision != 5 || op.Release.Status != "deployed" || op.Release.ChartVersion != "0.2.0" {
			t.Errorf("release after the rollback = %+v", op.Release)
		}
		if _, data := renderedValues(t, ns, "demo"); data["greeting"] != "changed" {
			t.Errorf("after the rollback greeting = %s", data["greeting"])
		}
	})

	t.Run("a release of another owner is refused", func(t *testing.T) {
		other := req
		other.Owner = "uid-2"
		_, err := engine.Ensure(ctx, other, nil)
		if err == nil || !strings.Contains(err.Error(), "belongs to another object") {
			t.Errorf("Ensure = %v", err)
		}
	})

	t.Run("uninstall removes the release and its objects", func(t *testing.T) {
		if err := engine.Uninstall(ctx, target, key, time.Minute, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := framework.Plane.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "demo-rendered", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the ConfigMap is still there: %v", err)
		}
		if info, err := engine.Get(ctx, target, key); err != nil || info != nil {
			t.Errorf("release after uninstall = %+v, %v", info, err)
		}
		secrets, err := framework.Plane.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=demo"})
		if err != nil || len(secrets.Items) != 0 {
			t.Errorf("release records left: %d, %v", len(secrets.Items), err)
		}
		if err := engine.Uninstall(ctx, target, key, time.Minute, ""); err != nil {
			t.Errorf("uninstalling a missing release: %v", err)
		}
	})
}

func TestAddonsHelmFailingChart(t *testing.T) {
	url := addonChartRepo(t, map[string][]string{"broken": {"0.1.0"}})
	engine, target := addonEngine(t, "e2e/failing", url)
	ns := addonNamespace(t, "addons-e2e-failing")
	ctx := context.Background()
	req := addons.Request{Target: target, Release: addons.ReleaseKey{Name: "broken", Namespace: ns}, CreateNamespace: true,
		Wait: true, Timeout: time.Minute, Chart: addons.ChartRef{Repository: url, Name: "broken"}}
	for attempt := 1; attempt <= 2; attempt++ {
		_, err := engine.Ensure(ctx, req, nil)
		var op *addons.OperationError
		if !errors.As(err, &op) {
			t.Fatalf("attempt %d: Ensure = %v", attempt, err)
		}
		// The first attempt installs; the next upgrades the failed release (nothing to roll back to).
		wantAction := addons.ActionInstall
		if attempt > 1 {
			wantAction = addons.ActionUpgrade
		}
		if op.Action != wantAction || op.RolledBack {
			t.Errorf("attempt %d: action %s, rolled back %v", attempt, op.Action, op.RolledBack)
		}
		if !strings.Contains(err.Error(), `ConfigMap "Not_A_Valid_Name" is invalid`) {
			t.Errorf("attempt %d: the error is not Helm's: %v", attempt, err)
		}
		if op.Release == nil || op.Release.Status != "failed" || op.Release.Revision != attempt {
			t.Errorf("attempt %d: release = %+v", attempt, op.Release)
		}
		t.Logf("attempt %d: %v", attempt, err)
	}
	if err := engine.Uninstall(ctx, target, req.Release, time.Minute, ""); err != nil {
		t.Errorf("uninstalling the failed release: %v", err)
	}
}

func TestAddonsHelmParallelThenDependent(t *testing.T) {
	url := addonChartRepo(t, map[string][]string{"demo": {"0.1.0"}})
	engine, target := addonEngine(t, "e2e/parallel", url)
	ns := addonNamespace(t, "addons-e2e-parallel")
	ctx := context.Background()
	request := func(name string) addons.Request {
		return addons.Request{Target: target, Release: addons.ReleaseKey{Name: name, Namespace: ns}, CreateNamespace: true,
			Wait: true, Timeout: time.Minute, Chart: addons.ChartRef{Repository: url, Name: "demo", Version: "0.1.0"},
			Values: addons.Values{"greeting": name}}
	}

	// Each of the two independent installs, once started, waits for the other to start: if
	// the engine ran them one after another, the first would wait in vain.
	var startedA, startedB = make(chan struct{}), make(chan struct{})
	rendezvous := func(mine, theirs chan struct{}) func(addons.Action) {
		return func(addons.Action) {
			close(mine)
			select {
			case <-theirs:
			case <-time.After(30 * time.Second):
				t.Error("the other install did not start while this one ran: installs are serialized")
			}
		}
	}
	var wg sync.WaitGroup
	results := make([]*addons.Result, 2)
	errs := make([]error, 2)
	began := time.Now()
	for i, c := range []struct {
		name         string
		mine, theirs chan struct{}
	}{{"independent-a", startedA, startedB}, {"independent-b", startedB, startedA}} {
		wg.Go(func() { results[i], errs[i] = engine.Ensure(ctx, request(c.name), rendezvous(c.mine, c.theirs)) })
	}
	wg.Wait()
	t.Logf("two independent installs in parallel took %s", time.Since(began).Round(time.Millisecond))
	for i, err := range errs {
		if err != nil || results[i].Action != addons.ActionInstall {
			t.Fatalf("independent install %d: %+v, %v", i, results[i], err)
		}
	}
	// The dependent one installs after both.
	res, err := engine.Ensure(ctx, request("dependent"), nil)
	if err != nil || res.Action != addons.ActionInstall {
		t.Fatalf("dependent install: %+v, %v", res, err)
	}
	dep, _ := renderedValues(t, ns, "dependent")
	if dep["greeting"] != "dependent" {
		t.Errorf("dependent rendered %v", dep)
	}
	for _, name := range []string{"independent-a", "independent-b", "dependent"} {
		if err := engine.Uninstall(ctx, target, addons.ReleaseKey{Name: name, Namespace: ns}, time.Minute, ""); err != nil {
			t.Error(err)
		}
	}
}

func TestAddonsHelmDeploymentWithoutWait(t *testing.T) {
	url := addonChartRepo(t, map[string][]string{"demo": {"0.1.0"}})
	engine, target := addonEngine(t, "e2e/deployment", url)
	ns := addonNamespace(t, "addons-e2e-deployment")
	ctx := context.Background()
	// The management plane has no nodes: the Deployment is made, its readiness not awaited.
	req := addons.Request{Target: target, Release: addons.ReleaseKey{Name: "withdeploy", Namespace: ns}, CreateNamespace: true,
		Timeout: time.Minute, Chart: addons.ChartRef{Repository: url, Name: "demo", Version: "0.1.0"},
		Values: addons.Values{"deployment": map[string]any{"enabled": true}}}
	if _, err := engine.Ensure(ctx, req, nil); err != nil {
		t.Fatal(err)
	}
	d, err := framework.Plane.Kube.AppsV1().Deployments(ns).Get(ctx, "withdeploy", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's Deployment: %v", err)
	}
	if d.Labels["app.kubernetes.io/managed-by"] != "Helm" || d.Annotations["meta.helm.sh/release-name"] != "withdeploy" {
		t.Errorf("the Deployment is not Helm's: %v %v", d.Labels, d.Annotations)
	}
	if err := engine.Uninstall(ctx, target, req.Release, time.Minute, ""); err != nil {
		t.Error(err)
	}
}

// TestAddonsHelmMemory installs 20 addons across 5 clusters (5 engine targets over the same API
// server, so 5 sets of clients and Configurations) and reports the engine's heap.
func TestAddonsHelmMemory(t *testing.T) {
	const clusters, perCluster = 5, 4
	url := addonChartRepo(t, map[string][]string{"demo": {"0.1.0"}})
	engine, target := addonEngine(t, "", url)
	ctx := context.Background()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	type job struct {
		target addons.Target
		key    addons.ReleaseKey
	}
	var jobs []job
	for c := range clusters {
		tgt := target
		tgt.Cluster = fmt.Sprintf("e2e/memory-%d", c)
		for a := range perCluster {
			// Two namespaces per cluster: two Configurations each.
			ns := addonNamespace(t, fmt.Sprintf("addons-e2e-mem-%d-%d", c, a%2))
			jobs = append(jobs, job{tgt, addons.ReleaseKey{Name: fmt.Sprintf("addon-%d", a), Namespace: ns}})
		}
	}
	began := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 5) // the controller's worker count
	for _, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, err := engine.Ensure(ctx, addons.Request{Target: j.target, Release: j.key, CreateNamespace: true, Wait: true,
				Timeout: time.Minute, Chart: addons.ChartRef{Repository: url, Name: "demo", Version: "0.1.0"},
				Values: addons.Values{"greeting": j.key.Name}}, nil)
			if err != nil {
				t.Errorf("%s: %v", j.key, err)
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	after := heap()
	configs, cached := engine.Cached()
	t.Logf("memory: %d addons across %d clusters installed in %s (5 at a time); engine heap %.1f MiB after GC (%.1f MiB before, +%.1f MiB); %d Configurations over %d clusters cached",
		len(jobs), clusters, took.Round(time.Millisecond), float64(after)/(1<<20), float64(before)/(1<<20),
		(float64(after)-float64(before))/(1<<20), configs, cached)
	if configs != clusters*2 || cached != clusters {
		t.Errorf("cached %d Configurations over %d clusters, want %d over %d", configs, cached, clusters*2, clusters)
	}
	// A second pass finds every release up to date through the cached Configurations.
	for _, j := range jobs {
		res, err := engine.Ensure(ctx, addons.Request{Target: j.target, Release: j.key, Wait: true, Timeout: time.Minute,
			Chart: addons.ChartRef{Repository: url, Name: "demo", Version: "0.1.0"}, Values: addons.Values{"greeting": j.key.Name}}, nil)
		if err != nil || res.Action != addons.ActionUnchanged {
			t.Errorf("%s second pass: %+v, %v", j.key, res, err)
		}
	}
	for _, j := range jobs {
		if err := engine.Uninstall(ctx, j.target, j.key, time.Minute, ""); err != nil {
			t.Error(err)
		}
	}
	for c := range clusters {
		engine.Forget(fmt.Sprintf("e2e/memory-%d", c))
	}
	if configs, cached := engine.Cached(); configs != 0 || cached != 0 {
		t.Errorf("after Forget: %d Configurations, %d clusters", configs, cached)
	}
}
