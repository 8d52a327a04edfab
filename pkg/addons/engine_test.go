package addons

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery/cached/memory"
	discoveryfake "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

// unitEngine is an engine whose one Configuration (cluster "unit", namespace "apps") keeps
// releases in memory and talks to a fake Kubernetes client: Helm's own action logic runs, the
// cluster does not. The e2e tests run the same engine against a real kube-apiserver.
func unitEngine(t *testing.T) (*Engine, Target, *kubefake.FailingKubeClient, *storage.Storage) {
	t.Helper()
	url, _ := chartRepo(t, map[string][]string{"demo": {"0.1.0", "0.2.0"}})
	charts, err := NewCharts(t.TempDir(), 0, allowing(url))
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(charts)
	setProtected(e) // no namespace of the stand-in tenant is protected
	mem := driver.NewMemory()
	mem.SetNamespace("apps")
	releases := storage.Init(mem)
	kube := &kubefake.FailingKubeClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}}
	disc := &discoveryfake.FakeDiscovery{Fake: &k8stesting.Fake{}, FakedServerVersion: &version.Info{GitVersion: "v1.36.3", Major: "1", Minor: "36"}}
	cfg := &action.Configuration{
		Releases: releases, KubeClient: kube,
		RESTClientGetter: namespacedGetter{clusterClients: &clusterClients{discovery: memory.NewMemCacheClient(disc),
			config: &rest.Config{Host: "https://127.0.0.1:1"}}, namespace: "apps"},
		Log: func(string, ...any) {},
	}
	target := Target{Cluster: "unit", Kubeconfig: []byte("unit")}
	e.configs[configKey{"unit", "apps"}] = &configEntry{kubeconfigSum: sha256Sum(target.Kubeconfig), cfg: cfg}
	t.Cleanup(func() { _ = url })
	unitRepo = url
	return e, target, kube, releases
}

var unitRepo string

func unitRequest(target Target, version string, values Values) Request {
	return Request{Target: target, Release: ReleaseKey{Name: "demo", Namespace: "apps"}, Timeout: time.Minute,
		Chart: ChartRef{Repository: unitRepo, Name: "demo", Version: version}, Values: values, Owner: "uid-1"}
}

func TestEnsureInstallsUpgradesAndLeavesAlone(t *testing.T) {
	e, target, _, releases := unitEngine(t)
	ctx := context.Background()
	var started []Action
	note := func(a Action) { started = append(started, a) }

	res, err := e.Ensure(ctx, unitRequest(target, "0.1.0", Values{"greeting": "a"}), note)
	if err != nil || res.Action != ActionInstall || res.Release.Revision != 1 || res.Release.Status != "deployed" {
		t.Fatalf("install: %+v, %v", res, err)
	}
	res, err = e.Ensure(ctx, unitRequest(target, "0.1.0", Values{"greeting": "a"}), note)
	if err != nil || res.Action != ActionUnchanged || res.Release.Revision != 1 {
		t.Fatalf("unchanged: %+v, %v", res, err)
	}
	res, err = e.Ensure(ctx, unitRequest(target, "0.2.0", Values{"greeting": "a"}), note)
	if err != nil || res.Action != ActionUpgrade || res.Release.Revision != 2 || res.Release.ChartVersion != "0.2.0" {
		t.Fatalf("version upgrade: %+v, %v", res, err)
	}
	// Values back to empty: Helm would reuse the old ones without ResetValues.
	res, err = e.Ensure(ctx, unitRequest(target, "0.2.0", nil), note)
	if err != nil || res.Action != ActionUpgrade || res.Release.ValuesHash != Hash(nil) {
		t.Fatalf("values upgrade: %+v, %v", res, err)
	}
	last, _ := releases.Last("demo")
	if len(last.Config) != 0 {
		t.Errorf("the release kept old values: %v", last.Config)
	}
	if last.Labels[OwnerLabel] != "uid-1" {
		t.Errorf("owner label = %v", last.Labels)
	}
	if want := []Action{ActionInstall, ActionUpgrade, ActionUpgrade}; len(started) != 3 || started[0] != want[0] || started[2] != want[2] {
		t.Errorf("started = %v", started)
	}
	other := unitRequest(target, "0.2.0", nil)
	other.Owner = "uid-2"
	if _, err := e.Ensure(ctx, other, nil); err == nil || !strings.Contains(err.Error(), "belongs to another object") {
		t.Errorf("another owner's request: %v", err)
	}
}

func TestEnsureRollsBackAFailedUpgrade(t *testing.T) {
	e, target, kube, _ := unitEngine(t)
	ctx := context.Background()
	if _, err := e.Ensure(ctx, unitRequest(target, "0.1.0", nil), nil); err != nil {
		t.Fatal(err)
	}
	kube.UpdateError = errors.New(`ConfigMap "Not_A_Valid_Name" is invalid`)
	_, err := e.Ensure(ctx, unitRequest(target, "0.2.0", nil), nil)
	var op *OperationError
	if !errors.As(err, &op) || op.Action != ActionUpgrade || !strings.Contains(err.Error(), "Not_A_Valid_Name") {
		t.Fatalf("Ensure = %v", err)
	}
	// The fake client fails the rollback's update too: reported, not hidden.
	if op.RolledBack || op.RollbackErr == nil || !strings.Contains(err.Error(), "the rollback failed too") {
		t.Errorf("rollback outcome: rolledBack=%v err=%v", op.RolledBack, op.RollbackErr)
	}
	kube.UpdateError = nil
	res, err := e.Ensure(ctx, unitRequest(target, "0.2.0", nil), nil)
	if err != nil || res.Action != ActionUpgrade || res.Release.Status != "deployed" {
		t.Fatalf("after the failure: %+v, %v", res, err)
	}
}

func TestEnsureRecoversAStalePendingRelease(t *testing.T) {
	e, target, _, releases := unitEngine(t)
	ctx := context.Background()
	if _, err := e.Ensure(ctx, unitRequest(target, "0.1.0", nil), nil); err != nil {
		t.Fatal(err)
	}
	last, _ := releases.Last("demo")
	// A young pending release is an operation in progress.
	pending := *last
	info := *last.Info
	pending.Info, pending.Version = &info, 2
	pending.Info.Status = release.StatusPendingUpgrade
	pending.Info.LastDeployed = helmtime.Now()
	if err := releases.Create(&pending); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Ensure(ctx, unitRequest(target, "0.2.0", nil), nil); err == nil || !strings.Contains(err.Error(), "operation in progress") {
		t.Fatalf("a young pending release: %v", err)
	}
	// Once its timeout has passed, it was left by a process that died: marked failed, then upgraded.
	pending.Info.LastDeployed = helmtime.Time{Time: time.Now().Add(-time.Hour)}
	if err := releases.Update(&pending); err != nil {
		t.Fatal(err)
	}
	res, err := e.Ensure(ctx, unitRequest(target, "0.2.0", nil), nil)
	if err != nil || res.Action != ActionUpgrade || res.Release.Revision != 3 {
		t.Fatalf("after a stale pending release: %+v, %v", res, err)
	}
	r2, _ := releases.Get("demo", 2)
	if r2.Info.Status != release.StatusFailed || !strings.Contains(r2.Info.Description, "pending-upgrade") {
		t.Errorf("revision 2 = %s %q", r2.Info.Status, r2.Info.Description)
	}
}

func TestEnsureReportsAFailedInstall(t *testing.T) {
	e, target, kube, _ := unitEngine(t)
	kube.WaitError = errors.New("context deadline exceeded: Deployment apps/demo is not ready")
	req := unitRequest(target, "0.1.0", nil)
	req.Wait = true
	_, err := e.Ensure(context.Background(), req, nil)
	var op *OperationError
	if !errors.As(err, &op) || op.Action != ActionInstall || op.Release == nil || op.Release.Status != "failed" || op.Release.Revision != 1 {
		t.Fatalf("Ensure = %v (%+v)", err, op)
	}
	if !strings.HasPrefix(err.Error(), "install failed: ") || !strings.Contains(err.Error(), "Deployment apps/demo is not ready") {
		t.Errorf("message = %q", err)
	}
	// The next attempt upgrades the failed release (Helm accepts that; Upgrade.Install would not install).
	kube.WaitError = nil
	res, err := e.Ensure(context.Background(), req, nil)
	if err != nil || res.Action != ActionUpgrade || res.Release.Revision != 2 || res.Release.Status != "deployed" {
		t.Fatalf("retry: %+v, %v", res, err)
	}
}

func TestReleaseLockSerializesOneRelease(t *testing.T) {
	e := NewEngine(nil)
	unlock := e.lock("c", ReleaseKey{"r", "ns"})
	other := e.lock("c", ReleaseKey{"s", "ns"}) // another release: not blocked
	other()
	acquired := make(chan struct{})
	go func() {
		u := e.lock("c", ReleaseKey{"r", "ns"})
		close(acquired)
		u()
	}()
	select {
	case <-acquired:
		t.Fatal("the same release was locked twice")
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	<-acquired
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.locks) != 0 {
		t.Errorf("%d locks left", len(e.locks))
	}
}

// TestEnsureRestrictedRefusesMoreThanEdit: a restricted addon whose chart binds cluster-admin
// is refused before Helm runs: no release, nothing sent to the cluster.
func TestEnsureRestrictedRefusesMoreThanEdit(t *testing.T) {
	e, target, kube, releases := unitEngine(t)
	req := unitRequest(target, "0.1.0", Values{"rbac": map[string]any{"clusterAdmin": true}})
	req.Restriction = "a chart from a repository (not a platform AddonDefinition)"
	kube.CreateError = errors.New("sent to the cluster")
	_, err := e.Ensure(context.Background(), req, nil)
	if err == nil || !strings.Contains(err.Error(),
		"chart demo 0.1.0 grants more than edit, which a chart from a repository (not a platform AddonDefinition) may not: ClusterRoleBinding demo-cluster-admin binds ClusterRole cluster-admin") {
		t.Fatalf("Ensure = %v", err)
	}
	if h, _ := releases.History("demo"); len(h) != 0 {
		t.Errorf("a release was recorded: %d revisions", len(h))
	}
	// The same chart within edit installs.
	kube.CreateError = nil
	req.Values = nil
	if _, err := e.Ensure(context.Background(), req, nil); err != nil {
		t.Errorf("restricted, within edit: %v", err)
	}
}

func TestCheckPrivilege(t *testing.T) {
	for _, tc := range []struct {
		manifest string
		want     string
	}{
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\nrules: [{apiGroups: [''], resources: [pods], verbs: [get, list]}]", ""},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\nrules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}]", `ClusterRole r grants "*"; ClusterRole r grants every resource ("*")`},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\nrules: [{apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [create, escalate]}]", `Role apps/r grants "escalate"; Role apps/r writes rbac.authorization.k8s.io`},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}", "RoleBinding apps/b binds ClusterRole admin, which the chart does not define"},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:controller:foo}", "ClusterRoleBinding b binds ClusterRole system:controller:foo, which the chart does not define"},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}", ""},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\nrules: [{apiGroups: [''], resources: [nodes/proxy], verbs: [get]}]", "ClusterRole r grants nodes/proxy"},
		// A chart's writing ClusterRole may be bound in a namespace, not cluster-wide (kube-system included).
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: w}\nrules: [{apiGroups: [''], resources: [pods], verbs: [create]}]\n---\n" +
			"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: w}\n---\n" +
			"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: c}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: w}",
			"ClusterRoleBinding c binds ClusterRole w in every namespace, and it writes"},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: edit}\nrules: []", "ClusterRole edit takes the name of a built-in role"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\nData: {a: c}", `the object has both "Data" and "data"`},
		{"apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Namespace, metadata: {name: nn}}]", "Namespace nn (v1) is not a kind"},
	} {
		problems, err := newPrivilegeCheck("apps", nil).manifest([]byte(tc.manifest))
		got := strings.Join(problems, "; ")
		if err != nil {
			got = err.Error()
		}
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.manifest, got, tc.want)
		}
	}
}

// TestEnsureRestrictedChecksObjectsMadeFromValues: a chart that turns a value into objects
// (extraObjects) is checked on what the values render: a ClusterRoleBinding to cluster-admin
// given as a value is refused, a ConfigMap given the same way installs.
func TestEnsureRestrictedChecksObjectsMadeFromValues(t *testing.T) {
	e, target, kube, releases := unitEngine(t)
	binding := map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "from-values"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{map[string]any{"kind": "User", "name": "operator"}}}
	req := unitRequest(target, "0.1.0", Values{"extraObjects": []any{binding}})
	req.Restriction = "a catalog chart with a Team's values"
	kube.CreateError = errors.New("sent to the cluster")
	_, err := e.Ensure(context.Background(), req, nil)
	if err == nil || !strings.Contains(err.Error(),
		"chart demo 0.1.0 grants more than edit, which a catalog chart with a Team's values may not: ClusterRoleBinding from-values binds ClusterRole cluster-admin") {
		t.Fatalf("Ensure = %v", err)
	}
	if h, _ := releases.History("demo"); len(h) != 0 {
		t.Errorf("a release was recorded: %d revisions", len(h))
	}
	kube.CreateError = nil
	req.Values = Values{"extraObjects": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "from-values"}}}}
	if _, err := e.Ensure(context.Background(), req, nil); err != nil {
		t.Errorf("restricted, a ConfigMap from values: %v", err)
	}
}
