package managementaddon

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	butlerinformers "github.com/butlerdotdev/butler-apiserver/pkg/generated/informers/externalversions"
)

// fakeEngine records what the controller asks of Helm and answers as told.
type fakeEngine struct {
	mu          sync.Mutex
	ensured     []addons.Request
	uninstalled []addons.ReleaseKey
	targets     []addons.Target
	ensureErr   error
	uninstErr   error
}

func (f *fakeEngine) Ensure(_ context.Context, req addons.Request, starting func(addons.Action)) (*addons.Result, error) {
	f.mu.Lock()
	f.ensured = append(f.ensured, req)
	err := f.ensureErr
	f.mu.Unlock()
	if starting != nil {
		starting(addons.ActionInstall)
	}
	if err != nil {
		return nil, err
	}
	return &addons.Result{Action: addons.ActionInstall, Release: addons.ReleaseInfo{Name: req.Release.Name, Namespace: req.Release.Namespace,
		Chart: req.Chart.Name, ChartVersion: req.Chart.Version, Revision: 1, Status: "deployed", ValuesHash: addons.Hash(req.Values)}}, nil
}

func (f *fakeEngine) Uninstall(_ context.Context, target addons.Target, key addons.ReleaseKey, _ time.Duration, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uninstalled = append(f.uninstalled, key)
	f.targets = append(f.targets, target)
	return f.uninstErr
}

func (f *fakeEngine) Forget(string) {}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// management is the controller's own way into the management cluster, as in a Pod.
var management = &rest.Config{Host: "https://10.96.0.1:443", BearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
	TLSClientConfig: rest.TLSClientConfig{CAFile: "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"}}

func definition() *v1alpha1.AddonDefinition {
	return &v1alpha1.AddonDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "flux-management"},
		Spec: v1alpha1.AddonDefinitionSpec{Category: "gitops",
			Chart: v1alpha1.ChartReference{Repository: "/charts", Name: "butler-flux", DefaultVersion: "2.9.5"},
			Defaults: &v1alpha1.AddonDefaults{Namespace: "flux-system", ReleaseName: "flux", Timeout: &metav1.Duration{Duration: 7 * time.Minute},
				Values: raw(`{"logLevel": "info", "multitenancy": true}`)},
		},
	}
}

func managementAddon() *v1alpha1.ManagementAddon {
	return &v1alpha1.ManagementAddon{
		ObjectMeta: metav1.ObjectMeta{Name: "flux", UID: "uid-flux", Generation: 1},
		Spec: v1alpha1.ManagementAddonSpec{Addon: "flux-management", Values: raw(`{"logLevel": "debug"}`),
			ServiceAccountRef: v1alpha1.NamespacedObjectReference{Namespace: "butler-management-addons", Name: "flux-installer"}},
	}
}

type fixture struct {
	t      *testing.T
	butler *fake.Clientset
	engine *fakeEngine
	c      *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	butler := fake.NewClientset(objs...)
	engine := &fakeEngine{}
	f := butlerinformers.NewSharedInformerFactory(butler, 0)
	b := f.Butler().V1alpha1()
	c, err := NewController(butler, engine, management, b.ManagementAddons(), b.AddonDefinitions(), b.ButlerConfigs())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	return &fixture{t: t, butler: butler, engine: engine, c: c}
}

// reconcile runs one reconcile of name once the informer shows every write made so far.
func (f *fixture) reconcile(name string) error {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		stored, err := f.butler.ButlerV1alpha1().ManagementAddons().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cached, err := f.c.addons.Get(name)
		return err == nil && apiequality.Semantic.DeepEqual(cached.Status, stored.Status) &&
			apiequality.Semantic.DeepEqual(cached.Finalizers, stored.Finalizers) &&
			apiequality.Semantic.DeepEqual(cached.DeletionTimestamp, stored.DeletionTimestamp), nil
	})
	if err != nil {
		f.t.Fatalf("the informer did not catch up: %v", err)
	}
	return f.c.Reconcile(context.Background(), name)
}

func (f *fixture) get(name string) *v1alpha1.ManagementAddon {
	f.t.Helper()
	a, err := f.butler.ButlerV1alpha1().ManagementAddons().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

// The release is the definition's, with its values under the addon's, owned by the addon, and
// every request of it goes as the named account: the kubeconfig the engine gets impersonates
// it (no groups) over the controller's own server and credential.
func TestInstallsAsTheNamedAccount(t *testing.T) {
	f := newFixture(t, definition(), managementAddon())
	if err := f.reconcile("flux"); err == nil || !strings.Contains(err.Error(), "look again") {
		t.Fatalf("an Installed addon should come back for a drift check, got %v", err)
	}
	if len(f.engine.ensured) != 1 {
		t.Fatalf("%d Ensure calls", len(f.engine.ensured))
	}
	req := f.engine.ensured[0]
	if req.Release != (addons.ReleaseKey{Name: "flux", Namespace: "flux-system"}) || req.Owner != "uid-flux" || !req.Wait ||
		req.Timeout != 7*time.Minute || req.Restriction != "" {
		t.Errorf("request %+v", req)
	}
	if req.Chart != (addons.ChartRef{Repository: "/charts", Name: "butler-flux", Version: "2.9.5"}) {
		t.Errorf("chart %+v", req.Chart)
	}
	if req.Values["logLevel"] != "debug" || req.Values["multitenancy"] != true {
		t.Errorf("values %v: the addon's over the definition's", req.Values)
	}
	kc, err := clientcmd.Load(req.Target.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	user := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	cluster := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	if user.Impersonate != "system:serviceaccount:butler-management-addons:flux-installer" || len(user.ImpersonateGroups) != 0 ||
		user.TokenFile != management.BearerTokenFile || user.Token != "" {
		t.Errorf("user %+v", user)
	}
	if cluster.Server != management.Host || cluster.CertificateAuthority != management.CAFile {
		t.Errorf("cluster %+v", cluster)
	}
	if req.Target.Cluster != "management/butler-management-addons/flux-installer" {
		t.Errorf("target %q", req.Target.Cluster)
	}
	a := f.get("flux")
	ready := meta.FindStatusCondition(a.Status.Conditions, ConditionReady)
	if a.Status.Phase != v1alpha1.TenantAddonInstalled || a.Status.InstalledVersion != "2.9.5" || ready == nil || ready.Status != metav1.ConditionTrue ||
		!strings.Contains(a.Status.Message, "installed as ServiceAccount butler-management-addons/flux-installer") ||
		a.Status.HelmRelease == nil || a.Status.HelmRelease.Namespace != "flux-system" || a.Finalizers[0] != Finalizer {
		t.Errorf("status %+v finalizers %v", a.Status, a.Finalizers)
	}
}

// kube-apiserver refuses butler-apiserver's impersonation (the chart lists no such account):
// the addon says which chart value grants it, and is tried again after the backoff.
func TestAccountNotGranted(t *testing.T) {
	f := newFixture(t, definition(), managementAddon())
	f.engine.ensureErr = &addons.OperationError{Err: errors.New(`Kubernetes cluster unreachable: serviceaccounts "flux-installer" is forbidden: ` +
		`User "system:serviceaccount:butler-system:butler-apiserver" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "butler-management-addons"`)}
	if err := f.reconcile("flux"); err == nil || !strings.Contains(err.Error(), "look again") {
		t.Fatalf("want a retry after the backoff, got %v", err)
	}
	a := f.get("flux")
	ready := meta.FindStatusCondition(a.Status.Conditions, ConditionReady)
	if a.Status.Phase != v1alpha1.TenantAddonFailed || ready == nil || ready.Reason != "AccountNotGranted" ||
		!strings.Contains(a.Status.Message, `list "flux-installer" in the chart's managementAddons.serviceAccounts`) {
		t.Errorf("status %+v", a.Status)
	}
}

// A catalog addon without a release namespace is refused rather than put in default.
func TestNoNamespaceIsASpecError(t *testing.T) {
	def := definition()
	def.Spec.Defaults.Namespace = ""
	f := newFixture(t, def, managementAddon())
	if err := f.reconcile("flux"); err != nil {
		t.Fatalf("a spec error waits for a change, got %v", err)
	}
	if len(f.engine.ensured) != 0 {
		t.Fatal("installed without a namespace")
	}
	if r := meta.FindStatusCondition(f.get("flux").Status.Conditions, ConditionReady); r == nil || r.Reason != "NoNamespace" {
		t.Errorf("condition %+v", r)
	}
}

// A deleted addon's release is uninstalled as the same account, the one its status recorded,
// and only then does the object go; a refused uninstall keeps it, saying why.
func TestDeleteUninstallsAsTheAccount(t *testing.T) {
	f := newFixture(t, definition(), managementAddon())
	_ = f.reconcile("flux")
	ctx := context.Background()
	a := f.get("flux")
	now := metav1.Now()
	a.DeletionTimestamp = &now
	if _, err := f.butler.ButlerV1alpha1().ManagementAddons().Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.engine.uninstErr = errors.New(`secrets "sh.helm.release.v1.flux.v1" is forbidden: User "system:serviceaccount:butler-management-addons:flux-installer" cannot delete resource "secrets"`)
	if err := f.reconcile("flux"); err == nil {
		t.Fatal("a refused uninstall should be tried again")
	}
	held := f.get("flux")
	if held.Status.Phase != v1alpha1.TenantAddonDeleting || len(held.Finalizers) != 1 ||
		meta.FindStatusCondition(held.Status.Conditions, ConditionReady).Reason != "UninstallFailed" {
		t.Fatalf("refused uninstall: %+v %v", held.Status, held.Finalizers)
	}
	f.engine.uninstErr = nil
	if err := f.reconcile("flux"); err != nil {
		t.Fatal(err)
	}
	if got := f.engine.uninstalled; len(got) != 2 || got[1] != (addons.ReleaseKey{Name: "flux", Namespace: "flux-system"}) {
		t.Errorf("uninstalled %v", got)
	}
	if f.engine.targets[1].Cluster != "management/butler-management-addons/flux-installer" {
		t.Errorf("uninstalled as %q", f.engine.targets[1].Cluster)
	}
	if len(f.get("flux").Finalizers) != 0 {
		t.Error("the finalizer stayed after the uninstall")
	}
}

func TestImpersonatingKubeconfigRefusesWhatItCannotCarry(t *testing.T) {
	for name, cfg := range map[string]*rest.Config{
		"none":                    nil,
		"an exec plugin":          {Host: "https://k", ExecProvider: &clientcmdapi.ExecConfig{Command: "token-helper"}},
		"already an impersonator": {Host: "https://k", Impersonate: rest.ImpersonationConfig{UserName: "someone"}},
	} {
		if _, err := impersonatingKubeconfig(cfg, "ns", "sa"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	withCert := &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CertData: []byte("cert"), KeyData: []byte("key"), CAData: []byte("ca")}}
	out, err := impersonatingKubeconfig(withCert, "ns", "sa")
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if u := kc.AuthInfos["addon"]; string(u.ClientCertificateData) != "cert" || u.Impersonate != "system:serviceaccount:ns:sa" {
		t.Errorf("user %+v", u)
	}
}
