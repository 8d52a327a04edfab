package tenantaddon

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	butlerinformers "github.com/butlerdotdev/butler-apiserver/pkg/generated/informers/externalversions"
)

const ns = "team-a"

// fakeEngine records what the controller asks of Helm and answers as told.
type fakeEngine struct {
	mu          sync.Mutex
	ensured     []addons.Request
	uninstalled []addons.ReleaseKey
	// uninstallRestrictions is, for each Uninstall, the restriction it was given.
	uninstallRestrictions []string
	ensureErr             error
	uninstErr             error
	action                addons.Action
	applied               []*unstructured.Unstructured
	applyErr              error
	// applyErrKind, when set, limits applyErr to objects of that kind.
	applyErrKind string
	// appliedBefore is, for each Ensure, how many objects were applied before it.
	appliedBefore []int
	// release is what Get returns (nil: no release).
	release *addons.ReleaseInfo
}

func (f *fakeEngine) Get(context.Context, addons.Target, addons.ReleaseKey) (*addons.ReleaseInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.release, nil
}

func (f *fakeEngine) Ensure(_ context.Context, req addons.Request, starting func(addons.Action)) (*addons.Result, error) {
	f.mu.Lock()
	f.ensured = append(f.ensured, req)
	f.appliedBefore = append(f.appliedBefore, len(f.applied))
	err, action := f.ensureErr, f.action
	f.mu.Unlock()
	if action == "" {
		action = addons.ActionInstall
	}
	if starting != nil {
		starting(action)
	}
	if err != nil {
		return nil, err
	}
	version := req.Chart.Version
	if version == "" {
		version = "1.0.0"
	}
	return &addons.Result{Action: action, Release: addons.ReleaseInfo{Name: req.Release.Name, Namespace: req.Release.Namespace,
		Chart: req.Chart.Name, ChartVersion: version, Revision: 1, Status: "deployed", ValuesHash: addons.Hash(req.Values)}}, nil
}

func (f *fakeEngine) Uninstall(_ context.Context, _ addons.Target, key addons.ReleaseKey, _ time.Duration, restriction string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uninstalled = append(f.uninstalled, key)
	f.uninstallRestrictions = append(f.uninstallRestrictions, restriction)
	return f.uninstErr
}

func (f *fakeEngine) Forget(string) {}

func (f *fakeEngine) Apply(_ context.Context, _ addons.Target, objs []*unstructured.Unstructured) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, objs...)
	if f.applyErrKind != "" && objs[0].GetKind() != f.applyErrKind {
		return nil
	}
	return f.applyErr
}

func (f *fakeEngine) requests() []addons.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]addons.Request(nil), f.ensured...)
}

type fixture struct {
	t      *testing.T
	butler *fake.Clientset
	engine *fakeEngine
	c      *Controller
	// tenantNamespaces are the tenant's namespaces and their labels.
	tenantNamespaces map[string]map[string]string
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func cluster(name string, ready bool) *v1alpha1.TenantCluster {
	tc := &v1alpha1.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "uid-" + "0123456789"},
		Spec: v1alpha1.TenantClusterSpec{Addons: v1alpha1.AddonsSpec{
			CNI: &v1alpha1.CNIAddon{Provider: "cilium", Version: "1.2.0", Values: raw(`{"layer": "cluster", "cluster": {"name": "` + name + `"}}`)},
		}},
	}
	if ready {
		tc.Status.TenantNamespace = name + "-01234567"
		tc.Status.KubeconfigSecretRef = &v1alpha1.LocalObjectReference{Name: name + "-admin-kubeconfig"}
	}
	return tc
}

func addon(name string, deps ...string) *v1alpha1.TenantAddon {
	a := &v1alpha1.TenantAddon{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-addon-" + name), Generation: 1},
		Spec:       v1alpha1.TenantAddonSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "c1"}, Addon: "demo"},
	}
	for _, d := range deps {
		a.Spec.DependsOn = append(a.Spec.DependsOn, v1alpha1.LocalObjectReference{Name: d})
	}
	return a
}

func definition() *v1alpha1.AddonDefinition {
	return &v1alpha1.AddonDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "demo"},
		Spec: v1alpha1.AddonDefinitionSpec{Category: "other",
			Chart: v1alpha1.ChartReference{Repository: "https://charts.example.com", Name: "demo-chart", DefaultVersion: "0.9.0"},
			Defaults: &v1alpha1.AddonDefaults{Namespace: "demo-system", Timeout: &metav1.Duration{Duration: 7 * time.Minute},
				Values: raw(`{"layer": "definition", "definitionOnly": true, "cluster": {"name": "none", "size": 3}}`)},
		},
	}
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	butler := fake.NewClientset(objs...)
	kube := kubefake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "c1-admin-kubeconfig", Namespace: "c1-01234567"},
		Data:       map[string][]byte{"admin.conf": []byte("apiVersion: v1\nkind: Config\n")},
	})
	engine := &fakeEngine{}
	tenantNamespaces := map[string]map[string]string{}
	f := butlerinformers.NewSharedInformerFactory(butler, 0)
	b := f.Butler().V1alpha1()
	c, err := NewController(butler, kube, engine, b.TenantAddons(), b.TenantClusters(), b.AddonDefinitions(), b.ButlerConfigs(), b.IPAllocations())
	if err != nil {
		t.Fatal(err)
	}
	c.namespaceLabels = func(_ context.Context, _ addons.Target, name string) (map[string]string, bool, error) {
		l, ok := tenantNamespaces[name]
		return l, ok, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	return &fixture{t: t, butler: butler, engine: engine, c: c, tenantNamespaces: tenantNamespaces}
}

// reconcile runs one reconcile of name once the informers show every write made so far.
func (f *fixture) reconcile(name string) error {
	f.t.Helper()
	f.settle()
	return f.c.Reconcile(context.Background(), ns+"/"+name)
}

// settle waits until the TenantAddon lister holds what the clientset holds.
func (f *fixture) settle() {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		list, err := f.butler.ButlerV1alpha1().TenantAddons(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		cached, _ := f.c.addons.TenantAddons(ns).List(everything)
		if len(cached) != len(list.Items) {
			return false, nil
		}
		for _, a := range list.Items {
			got, err := f.c.addons.TenantAddons(ns).Get(a.Name)
			// The fake tracker may leave resourceVersion alone: compare what the controller reads.
			if err != nil || got.ResourceVersion != a.ResourceVersion || !apiequality.Semantic.DeepEqual(got.Status, a.Status) ||
				!reflect.DeepEqual(got.Finalizers, a.Finalizers) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		f.t.Fatalf("the informer did not catch up: %v", err)
	}
}

func (f *fixture) get(name string) *v1alpha1.TenantAddon {
	f.t.Helper()
	a, err := f.butler.ButlerV1alpha1().TenantAddons(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

func ready(a *v1alpha1.TenantAddon) *metav1.Condition {
	return meta.FindStatusCondition(a.Status.Conditions, ConditionReady)
}

func TestInstallLayersValuesAndReportsTheRelease(t *testing.T) {
	a := addon("cni")
	a.Labels = map[string]string{SlotLabel: "cni"}
	a.Spec.Values = raw(`{"layer": "addon", "addonOnly": 1}`)
	f := newFixture(t, cluster("c1", true), definition(), a)

	err := f.reconcile("cni")
	if err == nil || !strings.Contains(err.Error(), "look again") {
		t.Fatalf("an Installed addon should come back for a drift check, got %v", err)
	}
	reqs := f.engine.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d Ensure calls", len(reqs))
	}
	req := reqs[0]
	wantValues := addons.Values{"layer": "addon", "definitionOnly": true, "addonOnly": float64(1),
		"cluster": map[string]any{"name": "c1", "size": float64(3)}}
	if !reflect.DeepEqual(req.Values, wantValues) {
		t.Errorf("values = %v, want %v", req.Values, wantValues)
	}
	if req.Chart != (addons.ChartRef{Repository: "https://charts.example.com", Name: "demo-chart", Version: "1.2.0"}) {
		t.Errorf("chart = %+v (the cluster slot's version should win over the definition's default)", req.Chart)
	}
	if req.Release != (addons.ReleaseKey{Name: "cni", Namespace: "demo-system"}) || req.Timeout != 7*time.Minute || !req.Wait || !req.CreateNamespace {
		t.Errorf("request = %+v", req)
	}
	if req.Target.Cluster != "team-a/c1/uid-0123456789" || !strings.Contains(string(req.Target.Kubeconfig), "kind: Config") {
		t.Errorf("target = %s %q", req.Target.Cluster, req.Target.Kubeconfig)
	}

	got := f.get("cni")
	if got.Status.Phase != v1alpha1.TenantAddonInstalled || got.Status.InstalledVersion != "1.2.0" || got.Status.ObservedGeneration != 1 {
		t.Errorf("status = %+v", got.Status)
	}
	if r := got.Status.HelmRelease; r == nil || *r != (v1alpha1.HelmReleaseStatus{Name: "cni", Namespace: "demo-system", Version: "1.2.0", Revision: 1, Status: "deployed"}) {
		t.Errorf("helmRelease = %+v", got.Status.HelmRelease)
	}
	if c := ready(got); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "values sha256:"+addons.Hash(wantValues)[:12]) {
		t.Errorf("Ready = %+v", c)
	}
	if len(got.Finalizers) != 1 || got.Finalizers[0] != Finalizer {
		t.Errorf("finalizers = %v", got.Finalizers)
	}
	// Installing was reported before Helm ran.
	sawInstalling := false
	for _, act := range f.butler.Actions() {
		if u, ok := act.(interface{ GetObject() runtime.Object }); ok && act.GetSubresource() == "status" {
			if ta, ok := u.GetObject().(*v1alpha1.TenantAddon); ok && ta.Status.Phase == v1alpha1.TenantAddonInstalling {
				sawInstalling = true
			}
		}
	}
	if !sawInstalling {
		t.Error("no Installing status was written before the install")
	}
}

func TestVersionPrecedence(t *testing.T) {
	a := addon("x")
	a.Spec.Version = "3.0.0"
	cfg := &v1alpha1.ButlerConfig{ObjectMeta: metav1.ObjectMeta{Name: "butler"}}
	f := newFixture(t, cluster("c1", true), definition(), a, cfg)
	_ = f.reconcile("x")
	if v := f.engine.requests()[0].Chart.Version; v != "3.0.0" {
		t.Errorf("spec.version should win, got %s", v)
	}
	// Without spec.version or a slot, the definition's default.
	f2 := newFixture(t, cluster("c1", true), definition(), addon("y"))
	_ = f2.reconcile("y")
	if v := f2.engine.requests()[0].Chart.Version; v != "0.9.0" {
		t.Errorf("the definition's default should apply, got %s", v)
	}
}

func TestWaitsForTheControlPlane(t *testing.T) {
	f := newFixture(t, cluster("c1", false), definition(), addon("cni"))
	if err := f.reconcile("cni"); err != nil {
		t.Fatalf("waiting is no error: %v", err)
	}
	got := f.get("cni")
	if got.Status.Phase != v1alpha1.TenantAddonPending || ready(got).Reason != "WaitingForControlPlane" {
		t.Errorf("status = %+v", got.Status)
	}
	if len(f.engine.requests()) != 0 {
		t.Error("Helm ran before the control plane was ready")
	}
}

func TestDependsOnWaitsThenInstalls(t *testing.T) {
	f := newFixture(t, cluster("c1", true), definition(), addon("lb", "cni"), addon("cni"))
	if err := f.reconcile("lb"); err != nil {
		t.Fatal(err)
	}
	if got := f.get("lb"); got.Status.Phase != v1alpha1.TenantAddonPending || ready(got).Reason != "WaitingForDependencies" ||
		!strings.Contains(got.Status.Message, "cni") {
		t.Fatalf("lb status = %+v", got.Status)
	}
	if len(f.engine.requests()) != 0 {
		t.Fatal("lb was installed before cni")
	}
	_ = f.reconcile("cni")
	_ = f.reconcile("lb")
	reqs := f.engine.requests()
	if len(reqs) != 2 || reqs[0].Release.Name != "cni" || reqs[1].Release.Name != "lb" {
		t.Fatalf("install order = %v", reqs)
	}
	if got := f.get("lb"); got.Status.Phase != v1alpha1.TenantAddonInstalled {
		t.Errorf("lb status = %+v", got.Status)
	}
}

func TestDependencyCycleIsACondition(t *testing.T) {
	f := newFixture(t, cluster("c1", true), definition(), addon("a", "b"), addon("b", "c"), addon("c", "a"))
	if err := f.reconcile("a"); err != nil {
		t.Fatal(err)
	}
	got := f.get("a")
	if got.Status.Phase != v1alpha1.TenantAddonFailed || ready(got).Reason != "DependencyCycle" || got.Status.Message != "dependsOn forms a cycle: a -> b -> c -> a" {
		t.Errorf("status = %+v", got.Status)
	}
	if len(f.engine.requests()) != 0 {
		t.Error("Helm ran for an addon in a cycle")
	}
}

func TestFailuresCarryHelmsMessage(t *testing.T) {
	helmErr := errors.New(`ConfigMap "Not_A_Valid_Name" is invalid: metadata.name: Invalid value`)
	for _, tc := range []struct {
		name      string
		err       error
		phase     v1alpha1.TenantAddonPhase
		reason    string
		installed string
	}{
		{"install", &addons.OperationError{Action: addons.ActionInstall, Err: helmErr,
			Release: &addons.ReleaseInfo{Name: "a", Namespace: "demo-system", ChartVersion: "0.9.0", Revision: 1, Status: "failed"}},
			v1alpha1.TenantAddonFailed, "InstallFailed", ""},
		{"upgrade rolled back", &addons.OperationError{Action: addons.ActionUpgrade, Err: helmErr, RolledBack: true,
			Release: &addons.ReleaseInfo{Name: "a", Namespace: "demo-system", ChartVersion: "0.8.0", Revision: 3, Status: "deployed"}},
			v1alpha1.TenantAddonDegraded, "UpgradeFailed", "0.8.0"},
		{"unreachable", &addons.OperationError{Err: fmt.Errorf("Kubernetes cluster unreachable: dial tcp 127.0.0.1:1: connect: connection refused")},
			v1alpha1.TenantAddonFailed, "ClusterUnreachable", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cluster("c1", true), definition(), addon("a"))
			f.engine.ensureErr = tc.err
			err := f.reconcile("a")
			if err == nil || !strings.Contains(err.Error(), "look again in 15s") {
				t.Errorf("a failure should come back after the first backoff, got %v", err)
			}
			got := f.get("a")
			if got.Status.Phase != tc.phase || ready(got).Reason != tc.reason || ready(got).Status != metav1.ConditionFalse {
				t.Errorf("status = %+v", got.Status)
			}
			if !strings.Contains(got.Status.Message, `ConfigMap "Not_A_Valid_Name" is invalid`) && tc.reason != "ClusterUnreachable" {
				t.Errorf("message %q lacks Helm's text", got.Status.Message)
			}
			if got.Status.InstalledVersion != tc.installed {
				t.Errorf("installedVersion = %q, want %q", got.Status.InstalledVersion, tc.installed)
			}
			if err := f.reconcile("a"); err == nil || !strings.Contains(err.Error(), "look again in 30s") {
				t.Errorf("the second failure should wait twice as long, got %v", err)
			}
		})
	}
}

func TestDeleteUninstallsThenReleases(t *testing.T) {
	now := metav1.Now()
	a := addon("a")
	a.Finalizers = []string{Finalizer}
	a.DeletionTimestamp = &now
	a.Status.HelmRelease = &v1alpha1.HelmReleaseStatus{Name: "a", Namespace: "demo-system"}
	f := newFixture(t, cluster("c1", true), definition(), a)
	if err := f.reconcile("a"); err != nil {
		t.Fatal(err)
	}
	if len(f.engine.uninstalled) != 1 || f.engine.uninstalled[0] != (addons.ReleaseKey{Name: "a", Namespace: "demo-system"}) {
		t.Errorf("uninstalled = %v", f.engine.uninstalled)
	}
	if got, err := f.butler.ButlerV1alpha1().TenantAddons(ns).Get(context.Background(), "a", metav1.GetOptions{}); err == nil && len(got.Finalizers) != 0 {
		t.Errorf("finalizers left: %v", got.Finalizers)
	}
}

// A Team's untrusted addon is uninstalled through the allow-list whatever Helm's record says: a
// release recorded before addons.RestrictedLabel existed has no label, and its pre-delete hooks
// ran ungated. The controller passes the restriction it installs with (a chart from a
// repository, a catalog chart with a Team's values); a catalog chart with the platform's values
// alone is not restricted.
func TestDeleteUninstallsATeamsAddonRestricted(t *testing.T) {
	now := metav1.Now()
	for _, c := range []struct {
		name   string
		change func(*v1alpha1.TenantAddon)
		want   string
	}{
		{"a chart from a repository", func(a *v1alpha1.TenantAddon) {
			a.Spec.Addon = ""
			a.Spec.Helm = &v1alpha1.HelmChartSpec{Repository: "https://charts.example.com", Chart: "demo-chart"}
		}, "a chart from a repository (not a platform AddonDefinition)"},
		{"a catalog chart with a Team's values", func(a *v1alpha1.TenantAddon) { a.Spec.Values = raw(`{"x": 1}`) }, "a catalog chart with a Team's values (spec.values)"},
		{"a catalog chart with the platform's values", func(*v1alpha1.TenantAddon) {}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := addon("a")
			c.change(a)
			a.Finalizers, a.DeletionTimestamp = []string{Finalizer}, &now
			a.Status.HelmRelease = &v1alpha1.HelmReleaseStatus{Name: "a", Namespace: "demo-system"}
			f := newFixture(t, cluster("c1", true), definition(), a)
			if err := f.reconcile("a"); err != nil {
				t.Fatal(err)
			}
			if got := f.engine.uninstallRestrictions; len(got) != 1 || (c.want == "") != (got[0] == "") || !strings.Contains(got[0], c.want) {
				t.Errorf("Uninstall restrictions %q, want one saying %q", got, c.want)
			}
		})
	}
}

// A Team operator removes the Team's values from a catalog addon whose release was recorded
// before addons.RestrictedLabel existed and deletes it before the controller upgrades (the
// cluster hibernated, say): the restriction, read from the spec, was none, and the hooks the
// Team's values made ran ungated. A release made with other values than the spec's now is
// uninstalled restricted; one made with them is not.
func TestAttackTeamValuesRemovedBeforeDelete(t *testing.T) {
	now := metav1.Now()
	for _, c := range []struct {
		name     string
		recorded addons.Values
		want     string
	}{
		{"recorded with a Team's values, removed since", addons.Values{"extraObjects": []any{"x"}}, "made with other values than the spec's now"},
		{"recorded with the spec's values", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := addon("a")
			a.Finalizers, a.DeletionTimestamp = []string{Finalizer}, &now
			a.Status.HelmRelease = &v1alpha1.HelmReleaseStatus{Name: "a", Namespace: "demo-system"}
			f := newFixture(t, cluster("c1", true), definition(), a)
			recorded := c.recorded
			if recorded == nil {
				want, err := f.c.desiredRelease(a, cluster("c1", true))
				if err != nil {
					t.Fatal(err)
				}
				recorded = want.values
			}
			f.engine.release = &addons.ReleaseInfo{Name: "a", Namespace: "demo-system", Status: "deployed", ValuesHash: addons.Hash(recorded)}
			if err := f.reconcile("a"); err != nil {
				t.Fatal(err)
			}
			if got := f.engine.uninstallRestrictions; len(got) != 1 || (c.want == "") != (got[0] == "") || !strings.Contains(got[0], c.want) {
				t.Errorf("Uninstall restrictions %q, want one saying %q", got, c.want)
			}
		})
	}
}

func TestDeleteWhenTheClusterIsGoneOrUnreachable(t *testing.T) {
	now := metav1.Now()
	deleting := func() *v1alpha1.TenantAddon {
		a := addon("a")
		a.Finalizers = []string{Finalizer}
		a.DeletionTimestamp = &now
		return a
	}
	// No cluster: nothing to uninstall from.
	f := newFixture(t, definition(), deleting())
	if err := f.reconcile("a"); err != nil {
		t.Fatal(err)
	}
	if len(f.engine.uninstalled) != 0 {
		t.Error("uninstalled from a cluster that is gone")
	}
	if got, err := f.butler.ButlerV1alpha1().TenantAddons(ns).Get(context.Background(), "a", metav1.GetOptions{}); err == nil && len(got.Finalizers) != 0 {
		t.Errorf("finalizers left: %v", got.Finalizers)
	}

	// A cluster being deleted whose control plane does not answer.
	tc := cluster("c1", true)
	tc.DeletionTimestamp = &now
	tc.Finalizers = []string{"butler.butlerlabs.dev/tenantcluster"}
	f = newFixture(t, tc, definition(), deleting())
	f.engine.uninstErr = errors.New("Kubernetes cluster unreachable: dial tcp 127.0.0.1:6443: connect: connection refused")
	if err := f.reconcile("a"); err != nil {
		t.Fatal(err)
	}
	if got, err := f.butler.ButlerV1alpha1().TenantAddons(ns).Get(context.Background(), "a", metav1.GetOptions{}); err == nil && len(got.Finalizers) != 0 {
		t.Errorf("finalizers left: %v", got.Finalizers)
	}

	// A live cluster that fails the uninstall keeps the addon and says why.
	f = newFixture(t, cluster("c1", true), definition(), deleting())
	f.engine.uninstErr = errors.New("uninstallation completed with 1 error(s): timed out waiting for the condition")
	if err := f.reconcile("a"); err == nil || !strings.Contains(err.Error(), "look again") {
		t.Fatalf("a failed uninstall should be retried, got %v", err)
	}
	got := f.get("a")
	if len(got.Finalizers) != 1 || got.Status.Phase != v1alpha1.TenantAddonDeleting || !strings.Contains(got.Status.Message, "timed out") {
		t.Errorf("addon = %v %+v", got.Finalizers, got.Status)
	}
}

func TestMissingDefinitionFailsUntilItAppears(t *testing.T) {
	f := newFixture(t, cluster("c1", true), addon("a"))
	if err := f.reconcile("a"); err != nil {
		t.Fatal(err)
	}
	if got := f.get("a"); got.Status.Phase != v1alpha1.TenantAddonFailed || ready(got).Reason != "AddonDefinitionNotFound" {
		t.Errorf("status = %+v", got.Status)
	}
}

var everything = labels.Everything()

func TestMetalLBGetsTheLoadBalancerAllocation(t *testing.T) {
	tc := cluster("c1", true)
	tc.Status.IPAllocationRefs = []v1alpha1.LocalObjectReference{{Name: "c1-nodes"}, {Name: "c1-lb"}}
	tc.Spec.Networking.LoadBalancerPool = &v1alpha1.AddressRange{Start: "192.0.2.1", End: "192.0.2.2"}
	nodes := &v1alpha1.IPAllocation{ObjectMeta: metav1.ObjectMeta{Name: "c1-nodes", Namespace: ns},
		Spec:   v1alpha1.IPAllocationSpec{Type: v1alpha1.IPAllocationNodes},
		Status: v1alpha1.IPAllocationStatus{Phase: v1alpha1.IPAllocationAllocated, StartAddress: "10.0.0.1", EndAddress: "10.0.0.3"}}
	lb := &v1alpha1.IPAllocation{ObjectMeta: metav1.ObjectMeta{Name: "c1-lb", Namespace: ns},
		Spec:   v1alpha1.IPAllocationSpec{Type: v1alpha1.IPAllocationLoadBalancer},
		Status: v1alpha1.IPAllocationStatus{Phase: v1alpha1.IPAllocationAllocated, StartAddress: "10.0.1.10", EndAddress: "10.0.1.20"}}
	def := definition()
	def.Name = "metallb"
	a := addon("lb")
	a.Spec.Addon = "metallb"
	f := newFixture(t, tc, def, a, nodes, lb)
	if err := f.reconcile("lb"); err == nil || !strings.Contains(err.Error(), "look again in 10m") {
		t.Fatalf("reconcile = %v", err)
	}
	// The release namespace, marked protected, then the pool.
	if len(f.engine.applied) != 3 || f.engine.applied[0].GetKind() != "Namespace" {
		t.Fatalf("applied %d objects", len(f.engine.applied))
	}
	pool := f.engine.applied[1]
	addrs, _, _ := unstructured.NestedStringSlice(pool.Object, "spec", "addresses")
	if pool.GetKind() != "IPAddressPool" || pool.GetNamespace() != "demo-system" || !reflect.DeepEqual(addrs, []string{"10.0.1.10-10.0.1.20"}) {
		t.Errorf("pool = %v", pool.Object)
	}
	if l2 := f.engine.applied[2]; l2.GetKind() != "L2Advertisement" {
		t.Errorf("second object = %v", l2.Object)
	}
	if got := f.get("lb"); got.Status.Phase != v1alpha1.TenantAddonInstalled || !strings.Contains(got.Status.Message, "10.0.1.10-10.0.1.20") {
		t.Errorf("status = %+v", got.Status)
	}

	// A pool MetalLB refuses leaves the addon Degraded, not Installed.
	f2 := newFixture(t, tc, def, a.DeepCopy(), nodes, lb)
	f2.engine.applyErr = errors.New(`admission webhook "ipaddresspoolvalidationwebhook.metallb.io" denied the request`)
	f2.engine.applyErrKind = "IPAddressPool"
	_ = f2.reconcile("lb")
	if got := f2.get("lb"); got.Status.Phase != v1alpha1.TenantAddonDegraded || ready(got).Reason != "LoadBalancerPoolFailed" {
		t.Errorf("status = %+v", got.Status)
	}
}

// TestDependsOnResolvesWithinTheCluster: an Installed addon named in dependsOn but of another
// cluster in the namespace does not satisfy it.
func TestDependsOnResolvesWithinTheCluster(t *testing.T) {
	other := addon("a")
	other.Spec.ClusterRef.Name = "c2"
	other.Status.Phase = v1alpha1.TenantAddonInstalled
	f := newFixture(t, cluster("c1", true), cluster("c2", true), definition(), other, addon("b", "a"))
	if err := f.reconcile("b"); err != nil {
		t.Fatal(err)
	}
	got := f.get("b")
	if got.Status.Phase != v1alpha1.TenantAddonPending || ready(got).Reason != "WaitingForDependencies" ||
		!strings.Contains(got.Status.Message, "a (no such addon of TenantCluster c1)") {
		t.Fatalf("b status = %+v", got.Status)
	}
	if len(f.engine.requests()) != 0 {
		t.Fatal("b was installed on another cluster's addon a")
	}
}

// TestClusterDeleteUninstallsInReverseDependencyOrder: with c depending on b depending on a,
// all deleted with their cluster, c is uninstalled first, then b, then a, each only once the one
// before is gone; meanwhile the others say what they wait for.
func TestClusterDeleteUninstallsInReverseDependencyOrder(t *testing.T) {
	now := metav1.Now()
	tc := cluster("c1", true)
	tc.DeletionTimestamp, tc.Finalizers = &now, []string{"butler.butlerlabs.dev/tenantcluster"}
	deleting := func(a *v1alpha1.TenantAddon) *v1alpha1.TenantAddon {
		a.DeletionTimestamp, a.Finalizers = &now, []string{Finalizer}
		a.Status.HelmRelease = &v1alpha1.HelmReleaseStatus{Name: a.Name, Namespace: "demo-system"}
		return a
	}
	// An addon of another cluster depending on a same-named "a" holds nothing back here.
	foreign := addon("x", "a")
	foreign.Spec.ClusterRef.Name = "c2"
	f := newFixture(t, tc, cluster("c2", true), definition(), deleting(addon("a")), deleting(addon("b", "a")), deleting(addon("c", "b")), foreign)
	ctx := context.Background()
	gone := func(name string) bool {
		_, err := f.butler.ButlerV1alpha1().TenantAddons(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
	for round := 0; round < 4 && !(gone("a") && gone("b") && gone("c")); round++ {
		for _, name := range []string{"a", "b", "c"} {
			if gone(name) {
				continue
			}
			if err := f.reconcile(name); err != nil {
				t.Fatal(err)
			}
			// The API server removes an object once its last finalizer is dropped; the fake does not.
			if a := f.get(name); len(a.Finalizers) == 0 {
				if err := f.butler.ButlerV1alpha1().TenantAddons(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if round == 0 && name == "a" {
				if got := f.get("a"); ready(got).Reason != "WaitingForDependents" || !strings.Contains(got.Status.Message, "waiting for b, which depend on it") {
					t.Errorf("a while b is there: %+v", got.Status)
				}
			}
		}
	}
	var order []string
	for _, k := range f.engine.uninstalled {
		order = append(order, k.Name)
	}
	if strings.Join(order, ",") != "c,b,a" {
		t.Errorf("uninstall order %v, want c, b, a", order)
	}
}

// TestTeamValuesRestrictCatalogCharts: who set the values decides whether a catalog chart is
// render-checked (Request.Restriction). The definition's defaults are the platform's; the
// TenantAddon's spec.values and its cluster's slot values are a Team's, unless the definition
// sets trustTeamValues. A chart named by repository is always checked.
func TestTeamValuesRestrictCatalogCharts(t *testing.T) {
	trusted := definition()
	trusted.Spec.TrustTeamValues = true
	const catalog = "a catalog chart with a Team's values"
	for _, tc := range []struct {
		name   string
		def    *v1alpha1.AddonDefinition
		change func(*v1alpha1.TenantAddon)
		want   string // "" for unrestricted, else a substring of the restriction
	}{
		{"the definition's defaults alone", definition(), func(*v1alpha1.TenantAddon) {}, ""},
		{"empty spec.values", definition(), func(a *v1alpha1.TenantAddon) { a.Spec.Values = raw(`{}`) }, ""},
		{"spec.values", definition(), func(a *v1alpha1.TenantAddon) { a.Spec.Values = raw(`{"x": 1}`) },
			catalog + " (spec.values), unless AddonDefinition demo sets trustTeamValues,"},
		{"the cluster's slot values", definition(), func(a *v1alpha1.TenantAddon) { a.Labels = map[string]string{SlotLabel: "cni"} },
			catalog + " (TenantCluster c1 spec.addons.cni.values), unless AddonDefinition demo sets trustTeamValues,"},
		{"both", definition(), func(a *v1alpha1.TenantAddon) {
			a.Labels = map[string]string{SlotLabel: "cni"}
			a.Spec.Values = raw(`{"x": 1}`)
		}, catalog + " (TenantCluster c1 spec.addons.cni.values, spec.values)"},
		{"trusted with spec.values", trusted, func(a *v1alpha1.TenantAddon) { a.Spec.Values = raw(`{"x": 1}`) }, ""},
		{"trusted with the slot's values", trusted, func(a *v1alpha1.TenantAddon) { a.Labels = map[string]string{SlotLabel: "cni"} }, ""},
		{"spec.helm without values", trusted, func(a *v1alpha1.TenantAddon) {
			a.Spec.Addon = ""
			a.Spec.Helm = &v1alpha1.HelmChartSpec{Repository: "https://charts.example.com", Chart: "demo-chart"}
		}, "a chart from a repository (not a platform AddonDefinition)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := addon("x")
			tc.change(a)
			f := newFixture(t, cluster("c1", true), tc.def, a)
			_ = f.reconcile("x")
			reqs := f.engine.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d Ensure calls; status %+v", len(reqs), f.get("x").Status)
			}
			got := reqs[0].Restriction
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Restriction = %q, want %q", got, tc.want)
			}
		})
	}
}

// A catalog addon's release namespace is marked protected before its chart is installed (made
// labelled when it is missing), so the Team's operators never hold it; a Team's own chart's
// namespace, a catalog chart's held to a Team's allow-list, and a system namespace, are left as
// they are. A namespace that cannot be marked
// installs nothing.
func TestCatalogAddonNamespaceIsProtected(t *testing.T) {
	helm := addon("own")
	helm.Spec.Addon = ""
	helm.Spec.Helm = &v1alpha1.HelmChartSpec{Repository: "https://charts.example.com", Chart: "web", Namespace: "apps"}
	system := addon("cni")
	system.Spec.Addon = "cilium"
	cilium := definition()
	cilium.Name, cilium.Spec.Defaults.Namespace = "cilium", "kube-system"
	tuned := addon("tuned")
	tuned.Spec.Values = raw(`{"replicas": 2}`) // a Team's values: held to the allow-list
	f := newFixture(t, cluster("c1", true), definition(), cilium, addon("a"), helm, system, tuned)
	for _, name := range []string{"a", "own", "cni", "tuned"} {
		_ = f.reconcile(name)
	}
	if len(f.engine.applied) != 1 || len(f.engine.appliedBefore) != 4 || f.engine.appliedBefore[0] != 1 {
		t.Fatalf("applied %d objects, %v before each install; want the catalog addon's namespace before its install, nothing else", len(f.engine.applied), f.engine.appliedBefore)
	}
	got := f.engine.applied[0]
	if got.GetKind() != "Namespace" || got.GetName() != "demo-system" || got.GetLabels()[external.ProtectedNamespaceLabel] != "true" {
		t.Errorf("applied %v", got.Object)
	}

	f.engine.applyErr = errors.New("admission webhook denied the request")
	f.engine.ensured = nil
	if err := f.reconcile("a"); err == nil {
		t.Error("a namespace that cannot be marked: no retry asked")
	}
	if len(f.engine.requests()) != 0 {
		t.Error("installed into a namespace that could not be marked protected")
	}
	if got := f.get("a"); got.Status.Phase != v1alpha1.TenantAddonPending || ready(got).Reason != "NamespaceNotProtected" {
		t.Errorf("status = %+v", got.Status)
	}
}

// TestCatalogAddonWaitsForAnUnlabelledNamespace: an operator prepared the namespace of a catalog
// addon before it installs (a Deployment waiting for the ServiceAccount its chart makes); the
// label would close the namespace to operators but leave their Deployment, which would get the
// account's token. The addon waits instead, until a tenant admin labels the namespace (after
// clearing it); a namespace that does not exist, or is labelled, is installed into.
func TestCatalogAddonWaitsForAnUnlabelledNamespace(t *testing.T) {
	f := newFixture(t, cluster("c1", true), definition(), addon("a"))
	f.tenantNamespaces["demo-system"] = map[string]string{"team": "ops"}
	if err := f.reconcile("a"); err == nil {
		t.Error("no retry asked")
	}
	if len(f.engine.requests()) != 0 || len(f.engine.applied) != 0 {
		t.Fatalf("installed (%d) or labelled (%d objects) an existing namespace an operator may have filled", len(f.engine.requests()), len(f.engine.applied))
	}
	got := f.get("a")
	if c := ready(got); got.Status.Phase != v1alpha1.TenantAddonPending || c.Reason != "NamespaceNotProtected" || !strings.Contains(c.Message, "tenant admin") {
		t.Errorf("status = %+v", got.Status)
	}
	f.tenantNamespaces["demo-system"][external.ProtectedNamespaceLabel] = "true"
	_ = f.reconcile("a") // asks to look again later (resync)
	if len(f.engine.requests()) != 1 {
		t.Error("not installed once a tenant admin labelled the namespace")
	}
}
