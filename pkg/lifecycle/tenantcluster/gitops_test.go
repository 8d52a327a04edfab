package tenantcluster

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/gitops"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

const gitToken = "s3cret-token"

// gitopsFixture is a controller with a management cluster where butler-apiserver may get only
// the Team Secrets granted it by name (as RBAC with resourceNames would), and a tenant that
// serves Flux's kinds and everything flux.yaml holds.
type gitopsFixture struct {
	c      *Controller
	mgmt   *kubefake.Clientset
	tenant *dynamicfake.FakeDynamicClient
	clock  *testingclock.FakePassiveClock
}

func newGitopsFixture(t *testing.T, granted ...string) *gitopsFixture {
	t.Helper()
	mgmt := kubefake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: "prod-01234567"},
			Data: map[string][]byte{"admin.conf": []byte("kubeconfig")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-token", Namespace: "team-a"},
			Data: map[string][]byte{"username": []byte("git"), "password": []byte(gitToken), "other": []byte("not for Flux")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "platform-token", Namespace: "team-a"},
			Data: map[string][]byte{"username": []byte("platform"), "password": []byte(gitToken)}},
	)
	allowed := map[string]bool{}
	for _, g := range granted {
		allowed[g] = true
	}
	mgmt.PrependReactor("get", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		get := a.(clienttesting.GetAction)
		if strings.HasPrefix(get.GetNamespace(), "prod-") || allowed[get.GetNamespace()+"/"+get.GetName()] {
			return false, nil, nil // its own tenant namespace, or granted by name
		}
		return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), get.GetName(), errors.New("RBAC: not granted"))
	})
	kinds := map[schema.GroupVersionKind]meta.RESTScope{
		external.FluxGitRepositoryGVK: meta.RESTScopeNamespace, external.FluxKustomizationGVK: meta.RESTScopeNamespace,
		secretGVK: meta.RESTScopeNamespace,
	}
	install, err := gitops.Install()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range install {
		scope := meta.RESTScopeNamespace
		if o.GetNamespace() == "" {
			scope = meta.RESTScopeRoot
		}
		kinds[o.GroupVersionKind()] = scope
	}
	tenantObjs, tenant := fakeObjectsOf(kinds)
	clock := testingclock.NewFakePassiveClock(time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC))
	c := &Controller{kube: mgmt, self: "system:serviceaccount:butler-system:butler-apiserver", clock: clock,
		gitopsState:      gitopsApplied{applied: map[string]grant{}, clients: map[string]tenantObjects{}},
		newTenantObjects: func([]byte) (*objects, error) { return tenantObjs, nil },
		lookup: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("140.82.112.3")}, nil
		}}
	return &gitopsFixture{c: c, mgmt: mgmt, tenant: tenant, clock: clock}
}

// gitopsCluster is a Ready cluster of team-a with an admitted (pinned) repository.
func gitopsCluster(namespace, url, secret string) *v1alpha1.TenantCluster {
	tc := cluster()
	tc.Namespace = namespace
	repo := &v1alpha1.GitRepository{URL: url}
	if secret != "" {
		repo.SecretRef = &v1alpha1.LocalObjectReference{Name: secret}
	}
	tc.Spec.Addons.Gitops = &v1alpha1.GitOpsAddon{Repository: repo}
	tc.Annotations = map[string]string{v1alpha1.GitOpsSourcePinAnnotation: v1alpha1.GitOpsSourcePin(url, "", "", secret)}
	return tc
}

func (f *gitopsFixture) ensure(t *testing.T, tc *v1alpha1.TenantCluster) *state {
	t.Helper()
	s := f.c.newState(tc)
	s.kubeconfigSecret = "prod-admin-kubeconfig"
	r, err := f.c.ensureGitOps(context.Background(), s)
	if err != nil || !r.Done {
		t.Fatalf("the GitOps step: %+v, %v; it is always done", r, err)
	}
	return s
}

// tenantObject is the tenant's object, or nil.
func (f *gitopsFixture) tenantObject(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := f.tenant.Tracker().Get(gvr, ns, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*unstructured.Unstructured)
}

func (f *gitopsFixture) setStatus(t *testing.T, gvr schema.GroupVersionResource, ns, name string, status map[string]any) {
	t.Helper()
	u := f.tenantObject(t, gvr, ns, name).DeepCopy()
	u.Object["status"] = status
	if err := f.tenant.Tracker().Update(gvr, u, ns); err != nil {
		t.Fatal(err)
	}
}

var (
	secretGVR             = corev1.SchemeGroupVersion.WithResource("secrets")
	deploymentGVR         = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	namespaceGVR          = corev1.SchemeGroupVersion.WithResource("namespaces")
	serviceAccountGVR     = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	clusterRoleBindingGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
)

func wantCondition(t *testing.T, s *state, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	if s.gitops == nil {
		t.Fatalf("no GitOps outcome, want %s", reason)
	}
	c := s.gitops.condition
	if c.Type != ConditionGitOpsSynced || c.Status != status || c.Reason != reason {
		t.Fatalf("condition %+v, want %s %s", c, status, reason)
	}
	if strings.Contains(c.Message, gitToken) {
		t.Errorf("the condition carries the credential: %s", c.Message)
	}
	return &c
}

// The step installs Flux (flux-system protected, the controllers), copies the credential's
// Flux keys, writes the GitRepository and Kustomization, and reads Flux's status back: in sync
// once the Kustomization applied the source's revision. A second look applies nothing.
func TestGitOpsAppliesFluxAndReadsItsStatus(t *testing.T) {
	f := newGitopsFixture(t, "team-a/git-token")
	tc := gitopsCluster("team-a", "https://git.example.com/team-a/fleet.git", "git-token")
	s := f.ensure(t, tc)
	wantCondition(t, s, metav1.ConditionFalse, gitops.ReasonProgressing)

	ns := f.tenantObject(t, namespaceGVR, "", gitops.Namespace)
	if ns == nil || ns.GetLabels()[external.ProtectedNamespaceLabel] != "true" {
		t.Fatalf("flux-system: %v", ns)
	}
	for _, name := range gitops.Controllers {
		if f.tenantObject(t, deploymentGVR, gitops.Namespace, name) == nil {
			t.Errorf("no Deployment %s", name)
		}
	}
	copied := f.tenantObject(t, secretGVR, gitops.Namespace, gitops.Name)
	if copied == nil {
		t.Fatal("the credential was not copied")
	}
	if data, _, _ := unstructured.NestedMap(copied.Object, "data"); len(data) != 2 || data["other"] != nil {
		t.Errorf("copied keys %v, want username and password only", data)
	}
	repo := f.tenantObject(t, external.FluxGitRepositoryGVR, gitops.Namespace, gitops.Name)
	ks := f.tenantObject(t, external.FluxKustomizationGVR, gitops.Namespace, gitops.Name)
	if repo == nil || ks == nil {
		t.Fatalf("GitRepository %v, Kustomization %v", repo != nil, ks != nil)
	}

	const rev = "main@sha1:2f6c2b5d0a3e4c1f9b8a7d6e5c4b3a2f1e0d9c8b"
	ready := []any{map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "ok", "lastTransitionTime": "2026-11-28T20:00:00Z"}}
	f.setStatus(t, external.FluxGitRepositoryGVR, gitops.Namespace, gitops.Name,
		map[string]any{"observedGeneration": int64(0), "conditions": ready, "artifact": map[string]any{"revision": rev}})
	f.setStatus(t, external.FluxKustomizationGVR, gitops.Namespace, gitops.Name,
		map[string]any{"observedGeneration": int64(0), "conditions": ready, "lastAppliedRevision": rev})
	before := len(f.tenant.Actions())
	s = f.ensure(t, tc)
	wantCondition(t, s, metav1.ConditionTrue, gitops.ReasonSynced)
	if st := s.gitops.status; st == nil || !st.InSync || st.Revision != rev {
		t.Errorf("status.gitops %+v", st)
	}
	for _, a := range f.tenant.Actions()[before:] {
		if a.GetVerb() != "get" {
			t.Errorf("a look that changes nothing sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if s.recheckAfter != gitops.SourceInterval {
		t.Errorf("recheck after %s, want %s (no watch reaches into the tenant)", s.recheckAfter, gitops.SourceInterval)
	}
}

// spec.addons.gitops.repository.interval is Flux's fetch interval, and how soon the step looks
// again while Flux is progressing or in sync: never later than the interval.
func TestGitOpsIntervalIsFluxsAndTheRecheck(t *testing.T) {
	f := newGitopsFixture(t, "team-a/git-token")
	tc := gitopsCluster("team-a", "https://git.example.com/team-a/fleet.git", "git-token")
	tc.Spec.Addons.Gitops.Repository.Interval = &metav1.Duration{Duration: 10 * time.Second}
	s := f.ensure(t, tc)
	repo := f.tenantObject(t, external.FluxGitRepositoryGVR, gitops.Namespace, gitops.Name)
	if repo == nil {
		t.Fatal("no GitRepository")
	}
	if got, _, _ := unstructured.NestedString(repo.Object, "spec", "interval"); got != "10s" {
		t.Errorf("the GitRepository's interval %q, want 10s", got)
	}
	if s.recheckAfter != 10*time.Second {
		t.Errorf("recheck after %s while progressing, want the interval 10s", s.recheckAfter)
	}
}

// Whatever the repository does, the cluster stays Ready: the condition says.
func TestGitOpsFailureKeepsTheClusterReady(t *testing.T) {
	f := newGitopsFixture(t)
	f.c.plan = f.c.steps()
	tc := gitopsCluster("team-a", "https://git.example.com/team-a/fleet.git", "")
	tc.Status.Gitops = &v1alpha1.GitOpsStatus{Revision: "main@sha1:0d9c", InSync: true}
	f.ensure(t, tc)
	f.setStatus(t, external.FluxGitRepositoryGVR, gitops.Namespace, gitops.Name, map[string]any{"observedGeneration": int64(0),
		"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "GitOperationFailed",
			"message": "couldn't find remote ref \"refs/heads/main\"", "lastTransitionTime": "2026-11-28T20:00:00Z"}}})
	s := f.ensure(t, tc)
	wantCondition(t, s, metav1.ConditionFalse, gitops.ReasonBranchNotFound)
	results := map[string]steps.Result{}
	var order []string
	for _, step := range f.c.plan {
		results[step.Name] = steps.Ready("Ready", "ok")
		order = append(order, step.Name)
	}
	st := f.c.status(tc, s, outcomeOf(results, order...), nil)
	if st.Phase != v1alpha1.TenantClusterReady || !meta.IsStatusConditionTrue(st.Conditions, ConditionReady) {
		t.Errorf("phase %s, Ready %v: a repository's failure held the cluster back", st.Phase, meta.FindStatusCondition(st.Conditions, ConditionReady))
	}
	if c := meta.FindStatusCondition(st.Conditions, ConditionGitOpsSynced); c == nil || c.Reason != gitops.ReasonBranchNotFound {
		t.Errorf("GitOpsSynced %+v", c)
	}
	if st.Gitops == nil || st.Gitops.InSync {
		t.Errorf("status.gitops %+v, want not in sync", st.Gitops)
	}
}

// butler-apiserver reads a Team's credential only when the Team's namespace admin granted it
// that Secret: otherwise the condition names the two commands that grant it, never a value,
// and nothing goes into the tenant.
func TestGitOpsCredentialNotReadable(t *testing.T) {
	f := newGitopsFixture(t) // nothing granted
	s := f.ensure(t, gitopsCluster("team-a", "https://git.example.com/team-a/fleet.git", "git-token"))
	c := wantCondition(t, s, metav1.ConditionFalse, ReasonCredentialNotReadable)
	for _, want := range []string{"kubectl -n team-a create role butler-gitops-git-token --verb=get --resource=secrets --resource-name=git-token",
		"kubectl -n team-a create rolebinding butler-gitops-git-token --role=butler-gitops-git-token --serviceaccount=butler-system:butler-apiserver"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("the message %q lacks %q", c.Message, want)
		}
	}
	if n := len(f.tenant.Actions()); n != 0 {
		t.Errorf("%d requests to the tenant, want none", n)
	}
}

// The attacks: a cluster naming a Secret of another Team (there is no namespace in a secretRef:
// it is read in the cluster's own namespace), or one of its own namespace the admin never
// granted butler-apiserver (the platform's token beside the Team's), gets nothing copied.
func TestAttackGitOpsCredentialNotGranted(t *testing.T) {
	for name, tc := range map[string]struct {
		cluster *v1alpha1.TenantCluster
		reason  string
	}{
		"another Team's Secret, by its name":  {gitopsCluster("team-b", "https://git.example.com/team-b/fleet.git", "git-token"), ReasonCredentialNotReadable},
		"a Secret the admin did not grant":    {gitopsCluster("team-a", "https://git.example.com/team-a/fleet.git", "platform-token"), ReasonCredentialNotReadable},
		"another Team's Secret, granted here": {gitopsCluster("team-b", "https://git.example.com/team-b/fleet.git", "git-token"), gitops.ReasonCredentialMissing},
	} {
		t.Run(name, func(t *testing.T) {
			granted := []string{"team-a/git-token"}
			if tc.reason == gitops.ReasonCredentialMissing {
				granted = append(granted, "team-b/git-token") // granted, but team-b has no such Secret
			}
			f := newGitopsFixture(t, granted...)
			s := f.ensure(t, tc.cluster)
			wantCondition(t, s, metav1.ConditionFalse, tc.reason)
			if f.tenantObject(t, secretGVR, gitops.Namespace, gitops.Name) != nil || len(f.tenant.Actions()) != 0 {
				t.Errorf("something was written into the tenant (%d requests)", len(f.tenant.Actions()))
			}
			for _, a := range f.mgmt.Actions() {
				if a.GetResource().Resource == "secrets" && a.GetNamespace() != tc.cluster.Namespace && !strings.HasPrefix(a.GetNamespace(), "prod-") {
					t.Errorf("read a Secret in %s for a cluster of %s", a.GetNamespace(), tc.cluster.Namespace)
				}
			}
		})
	}
}

// A repository whose host resolves to an internal address is refused before Flux is told of it,
// unless the platform allows its host:port (the tests' Git server).
func TestGitOpsFetchPolicy(t *testing.T) {
	f := newGitopsFixture(t)
	f.c.lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.0.0.5")}, nil
	}
	tc := gitopsCluster("team-a", "http://git.internal.example:8080/fleet.git", "")
	s := f.ensure(t, tc)
	wantCondition(t, s, metav1.ConditionFalse, gitops.ReasonRepositoryRefused)
	if len(f.tenant.Actions()) != 0 {
		t.Error("a refused repository wrote into the tenant")
	}
	f.c.fetch = addons.FetchPolicy{Allowed: addons.AllowHostPorts([]string{"git.internal.example:8080"})}
	s = f.ensure(t, tc)
	wantCondition(t, s, metav1.ConditionFalse, gitops.ReasonProgressing)
	if f.tenantObject(t, external.FluxGitRepositoryGVR, gitops.Namespace, gitops.Name) == nil {
		t.Error("the allowed repository was not written")
	}
}

// A host that resolved to a public address when the step wrote the GitRepository, and to an
// internal one later (the admin's own DNS name moved): the step withdraws the GitRepository, so
// Flux stops fetching it, and says why; it writes it again once the name is public again.
func TestAttackGitOpsHostMovesToAnInternalAddress(t *testing.T) {
	f := newGitopsFixture(t)
	tc := gitopsCluster("team-a", "https://git.example.com/team-a/fleet.git", "")
	f.ensure(t, tc)
	if f.tenantObject(t, external.FluxGitRepositoryGVR, gitops.Namespace, gitops.Name) == nil {
		t.Fatal("the repository was not written")
	}
	f.c.lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	}
	s := f.ensure(t, tc)
	wantCondition(t, s, metav1.ConditionFalse, gitops.ReasonRepositoryRefused)
	if f.tenantObject(t, external.FluxGitRepositoryGVR, gitops.Namespace, gitops.Name) != nil {
		t.Error("the GitRepository stayed: Flux goes on fetching an internal address")
	}
	f.c.lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("140.82.112.3")}, nil
	}
	f.ensure(t, tc)
	if f.tenantObject(t, external.FluxGitRepositoryGVR, gitops.Namespace, gitops.Name) == nil {
		t.Error("the GitRepository was not written again once the name was public again")
	}
}

// Removing the repository is a hand-off: the Kustomization stops pruning and goes, with the
// GitRepository and the credential's copy, and what Flux applied stays; Flux's controllers stay
// while the gitops slot does. Removing the slot then takes the controllers too.
func TestGitOpsRemovalIsAHandOff(t *testing.T) {
	f := newGitopsFixture(t, "team-a/git-token")
	tc := gitopsCluster("team-a", "https://git.example.com/team-a/fleet.git", "git-token")
	s := f.ensure(t, tc)
	tc.Status.Gitops = s.gitops.status
	tc.Status.Conditions = []metav1.Condition{s.gitops.condition}
	var pruneOff bool
	f.tenant.PrependReactor("delete", "kustomizations", func(clienttesting.Action) (bool, runtime.Object, error) {
		ks := f.tenantObject(t, external.FluxKustomizationGVR, gitops.Namespace, gitops.Name)
		prune, found, _ := unstructured.NestedBool(ks.Object, "spec", "prune")
		pruneOff = found && !prune
		return false, nil, nil
	})

	tc.Spec.Addons.Gitops.Repository = nil
	for i := 0; i < 3 && (s.gitops == nil || !s.gitops.clear); i++ {
		s = f.ensure(t, tc)
	}
	if s.gitops == nil || !s.gitops.clear {
		t.Fatalf("not cleared: %+v", s.gitops)
	}
	if !pruneOff {
		t.Error("the Kustomization was deleted while it pruned: Flux would delete what it applied")
	}
	for _, gvr := range []schema.GroupVersionResource{external.FluxKustomizationGVR, external.FluxGitRepositoryGVR, secretGVR} {
		if f.tenantObject(t, gvr, gitops.Namespace, gitops.Name) != nil {
			t.Errorf("%s %s stayed", gvr.Resource, gitops.Name)
		}
	}
	if f.tenantObject(t, clusterRoleBindingGVR, "", gitops.Name) != nil || f.tenantObject(t, serviceAccountGVR, gitops.Namespace, gitops.Name) != nil {
		t.Error("the cluster-admin account butler-gitops stayed after its repository went")
	}
	for _, name := range gitops.Controllers {
		if f.tenantObject(t, deploymentGVR, gitops.Namespace, name) == nil {
			t.Errorf("Deployment %s went with the repository; it goes with the slot", name)
		}
	}
	st := f.c.status(tc, s, outcomeOf(map[string]steps.Result{stepGitOps: steps.Ready("NoGitOps", "")}, stepGitOps), nil)
	if st.Gitops != nil || meta.FindStatusCondition(st.Conditions, ConditionGitOpsSynced) != nil {
		t.Errorf("status.gitops %+v and GitOpsSynced stayed", st.Gitops)
	}

	// The slot goes too (with the status still showing a repository): the controllers go.
	tc.Spec.Addons.Gitops = nil
	for range 3 {
		f.ensure(t, tc)
	}
	for _, name := range gitops.Controllers {
		if f.tenantObject(t, deploymentGVR, gitops.Namespace, name) != nil {
			t.Errorf("Deployment %s stayed after the slot went", name)
		}
	}
	if f.tenantObject(t, namespaceGVR, "", gitops.Namespace) == nil {
		t.Error("flux-system went: a tenant admin's objects of Flux's kinds would go with it")
	}
}

// An operator holds edit in a flux-system they made before the repository was set (a TenantAddon
// of theirs, or kubectl), and left there a Pod waiting for the butler-gitops account: the step
// installs nothing there, neither the cluster-admin account nor the credential, until a tenant
// admin labels it; and it never adopts one made meanwhile.
func TestAttackGitOpsIntoTheOperatorsFluxSystem(t *testing.T) {
	f := newGitopsFixture(t, "team-a/git-token")
	operators := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": gitops.Namespace}}}
	if err := f.tenant.Tracker().Add(operators); err != nil {
		t.Fatal(err)
	}
	tc := gitopsCluster("team-a", "https://git.example.com/team-a/fleet.git", "git-token")
	s := f.ensure(t, tc)
	c := wantCondition(t, s, metav1.ConditionFalse, ReasonNamespaceNotProtected)
	if !strings.Contains(c.Message, external.ProtectedNamespaceLabel) {
		t.Errorf("the condition does not say what to do: %s", c.Message)
	}
	if f.tenantObject(t, clusterRoleBindingGVR, "", gitops.Name) != nil || f.tenantObject(t, serviceAccountGVR, gitops.Namespace, gitops.Name) != nil {
		t.Error("the cluster-admin account was made in the operators' namespace")
	}
	if f.tenantObject(t, secretGVR, gitops.Namespace, gitops.Name) != nil {
		t.Error("the credential was copied into the operators' namespace")
	}
	if ns := f.tenantObject(t, namespaceGVR, "", gitops.Namespace); ns.GetLabels()[external.ProtectedNamespaceLabel] == "true" {
		t.Error("the step labelled the operators' namespace protected, leaving what they put there")
	}

	// Made by someone else between the step's read and its create: not adopted either.
	g := newGitopsFixture(t, "team-a/git-token")
	g.tenant.PrependReactor("create", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("namespaces"), gitops.Namespace)
	})
	s = g.ensure(t, tc)
	wantCondition(t, s, metav1.ConditionFalse, ReasonNamespaceNotProtected)
	if g.tenantObject(t, clusterRoleBindingGVR, "", gitops.Name) != nil {
		t.Error("the cluster-admin account was made in a namespace made meanwhile")
	}

	// Once a tenant admin labels it, the step installs.
	labelled := operators.DeepCopy()
	labelled.SetLabels(map[string]string{external.ProtectedNamespaceLabel: "true"})
	if err := f.tenant.Tracker().Update(namespaceGVR, labelled, ""); err != nil {
		t.Fatal(err)
	}
	s = f.ensure(t, tc)
	wantCondition(t, s, metav1.ConditionFalse, gitops.ReasonProgressing)
	if f.tenantObject(t, clusterRoleBindingGVR, "", gitops.Name) == nil {
		t.Error("nothing installed in a flux-system a tenant admin labelled")
	}
}
