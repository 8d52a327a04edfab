package tenantcluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// The real pair's refusals, as capi-steward writes them into its TenantControlPlaneCreated
// condition (Steward d49041f's webhooks behind "admission webhook ... denied the request").
const (
	refusedCreate  = `admission webhook "vtenantcontrolplane.kb.io" denied the request: unable to create a TenantControlPlane with a Kubernetes version greater than the supported one, actually v1.35`
	refusedUpgrade = `admission webhook "vtenantcontrolplane.kb.io" denied the request: unable to upgrade to a version greater than the supported one (v1.35)`
	refusedStore   = `admission webhook "vtenantcontrolplane.kb.io" denied the request: nope DataStore does not exist`
	webhookDown    = `Internal error occurred: failed calling webhook "vtenantcontrolplane.kb.io": failed to call webhook: Post "https://steward-webhook-service.steward-system.svc:443/validate": dial tcp 10.96.0.9:443: connect: connection refused`
)

// TestRefusedBecause: each refusal of the real pair says which provider cannot do what, and the
// field that asks for it, as a failure (a person has to act); one not recognised stays a wait
// with the provider's words.
func TestRefusedBecause(t *testing.T) {
	kamaji := &v1alpha1.ButlerConfig{Spec: v1alpha1.ButlerConfigSpec{ControlPlaneProvider: v1alpha1.ControlPlaneProviderKamaji}}
	named := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: v1alpha1.TenantClusterSpec{KubernetesVersion: "v1.36.3",
		ControlPlane: v1alpha1.ControlPlaneSpec{DataStoreRef: &v1alpha1.LocalObjectReference{Name: "nope"}}}}
	unnamed := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: v1alpha1.TenantClusterSpec{KubernetesVersion: "v1.36.3"}}
	for _, tc := range []struct {
		name, why, reason string
		cluster           *v1alpha1.TenantCluster
		config            *v1alpha1.ButlerConfig
		failed            bool
		contains          []string
	}{
		{"version on create", refusedCreate, "VersionUnsupported", unnamed, nil, true,
			[]string{"control plane provider steward cannot run Kubernetes v1.36.3 (spec.kubernetesVersion): ", refusedCreate}},
		{"version on upgrade", refusedUpgrade, "VersionUnsupported", unnamed, nil, true,
			[]string{"control plane provider steward cannot run Kubernetes v1.36.3 (spec.kubernetesVersion)"}},
		{"Kamaji named", refusedCreate, "VersionUnsupported", unnamed, kamaji, true,
			[]string{"control plane provider kamaji cannot run Kubernetes v1.36.3"}},
		{"DataStore named", refusedStore, "DataStoreNotFound", named, nil, true,
			[]string{"control plane provider steward cannot keep the cluster's data in DataStore nope (spec.controlPlane.dataStoreRef): ", refusedStore}},
		{"default DataStore", refusedStore, "DataStoreNotFound", unnamed, nil, true,
			[]string{"control plane provider steward cannot keep the cluster's data in its default DataStore (spec.controlPlane.dataStoreRef unset)"}},
		{"webhook down", webhookDown, "ProviderUnavailable", unnamed, nil, true,
			[]string{"control plane provider steward cannot create or update TenantControlPlanes: its admission webhook does not answer", "connection refused"}},
		{"not recognised", "quota exceeded", "TenantControlPlaneNotCreated", unnamed, nil, false,
			[]string{"control plane provider steward could not create TenantControlPlane ns/prod: quota exceeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := refusedBecause(component.Input{Cluster: tc.cluster, Config: tc.config}, "ns", tc.why)
			if r.Reason != tc.reason || r.Failed != tc.failed || r.Done {
				t.Fatalf("%+v, want reason %s, failed %v", r, tc.reason, tc.failed)
			}
			for _, want := range tc.contains {
				if !strings.Contains(r.Message, want) {
					t.Errorf("message %q lacks %q", r.Message, want)
				}
			}
		})
	}
}

// TestSilentProvider: while the provider is within its time, the usual wait and a recheck when
// that time is up; after it, a wait naming the provider and what it did not do; an object whose
// creation time is not known is new.
func TestSilentProvider(t *testing.T) {
	now := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	c := &Controller{clock: clocktesting.NewFakePassiveClock(now)}
	waiting := steps.Waiting("WaitingForTenantControlPlane", "waiting")
	for _, tc := range []struct {
		name    string
		created time.Time
		reason  string
		recheck time.Duration
	}{
		{"new", now.Add(-10 * time.Second), "WaitingForTenantControlPlane", providerSilentAfter - 10*time.Second},
		{"not known", time.Time{}, "WaitingForTenantControlPlane", providerSilentAfter},
		{"silent", now.Add(-2 * time.Minute), "ProviderNotResponding", providerSilentAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stepState(v1alpha1.ProviderAWS)
			r := c.silentProvider(s, tc.created, waiting, "create TenantControlPlane ns/prod")
			if r.Reason != tc.reason || r.Done || r.Failed {
				t.Errorf("%+v, want a wait, reason %s", r, tc.reason)
			}
			if s.recheckAfter != tc.recheck {
				t.Errorf("recheck after %s, want %s: a silent provider sends no event", s.recheckAfter, tc.recheck)
			}
			if want := "control plane provider steward has not acted in 2m0s: it did not create TenantControlPlane ns/prod (is it running?)"; tc.reason == "ProviderNotResponding" && r.Message != want {
				t.Errorf("message %q, want %q", r.Message, want)
			}
		})
	}
}

// TestEnsureControlPlaneSaysWhyTheProviderDidNot: the control plane step turns the provider's
// refusal into the cluster's condition at once, on create and on an upgrade Steward refuses
// (before: an endless TenantControlPlaneNotCreated wait, and "Upgrading" for ever), and a
// provider silent for longer than providerSilentAfter is named.
func TestEnsureControlPlaneSaysWhyTheProviderDidNot(t *testing.T) {
	objs, client := fakeObjects(t)
	now := time.Now()
	c := &Controller{objects: objs, clock: clocktesting.NewFakePassiveClock(now)}
	s := stepState(v1alpha1.ProviderAWS)
	ctx := context.Background()
	if _, err := c.ensureControlPlane(ctx, s); err != nil {
		t.Fatal(err)
	}
	created := func(status, message string) map[string]any {
		return map[string]any{"conditions": []any{map[string]any{"type": "TenantControlPlaneCreated", "status": status, "reason": "X", "message": message}}}
	}
	setStatus(t, client, external.StewardControlPlaneGVK, s.namespace, "prod", created("False", refusedCreate))
	r, err := c.ensureControlPlane(ctx, s)
	wantResult(t, "a version Steward refuses", r, err, false, "VersionUnsupported")
	if !r.Failed || !strings.Contains(r.Message, "control plane provider steward cannot run Kubernetes "+s.tc.Spec.KubernetesVersion) {
		t.Errorf("%+v: not a failure naming the provider and the version", r)
	}

	// Steward refuses the upgrade: its TenantControlPlane keeps serving the version before.
	tcp := &unstructured.Unstructured{}
	tcp.SetGroupVersionKind(external.TenantControlPlaneGVK)
	tcp.SetName("prod")
	tcp.SetNamespace(s.namespace)
	tcp.SetCreationTimestamp(metav1.NewTime(now.Add(-time.Hour)))
	if err := client.Tracker().Create(external.TenantControlPlaneGVR, tcp, s.namespace); err != nil {
		t.Fatal(err)
	}
	setStatus(t, client, external.TenantControlPlaneGVK, s.namespace, "prod", map[string]any{
		"kubernetesResources": map[string]any{"version": map[string]any{"version": "v1.35.0", "status": "Ready"}}})
	setStatus(t, client, external.StewardControlPlaneGVK, s.namespace, "prod", created("False", refusedUpgrade))
	r, err = c.ensureControlPlane(ctx, s)
	wantResult(t, "an upgrade Steward refuses", r, err, false, "VersionUnsupported")
	setStatus(t, client, external.StewardControlPlaneGVK, s.namespace, "prod", created("True", ""))
	r, err = c.ensureControlPlane(ctx, s)
	wantResult(t, "an upgrade under way", r, err, false, "Upgrading")

	// Steward has written nothing on its TenantControlPlane for an hour.
	setStatus(t, client, external.TenantControlPlaneGVK, s.namespace, "prod", map[string]any{})
	r, err = c.ensureControlPlane(ctx, s)
	wantResult(t, "Steward silent", r, err, false, "ProviderNotResponding")
	if !strings.Contains(r.Message, "did not write a status on TenantControlPlane "+s.namespace+"/prod") {
		t.Errorf("message %q does not say what Steward did not do", r.Message)
	}
}

// lease is a leader-election Lease as client-go's leader election writes it: held by holder
// ("" once released), renewed at renewed, for 15 s.
func lease(ns, name, holder string, renewed time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: renewed}}}
}

// controlPlaneLeases runs the control plane step of a new Steward cluster at now, twice (the
// first writes its Cluster and StewardControlPlane), ButlerConfig naming namespaces as the
// controllers' and the management cluster holding leases; tcp: a TenantControlPlane without
// status exists; why: the provider's TenantControlPlaneCreated False message, if any. It
// returns the second step's result, the cluster's state and the client the Leases are read with.
func controlPlaneLeases(t *testing.T, now time.Time, namespaces []string, leases []runtime.Object, tcp bool, why string) (steps.Result, *state, *kubefake.Clientset) {
	t.Helper()
	objs, client := fakeObjects(t)
	kube := kubefake.NewSimpleClientset(leases...)
	c := &Controller{objects: objs, kube: kube, clock: clocktesting.NewFakePassiveClock(now)}
	s := stepState(v1alpha1.ProviderLocal)
	s.in.Config = &v1alpha1.ButlerConfig{Spec: v1alpha1.ButlerConfigSpec{ControlPlaneProviderNamespaces: namespaces}}
	ctx := context.Background()
	if _, err := c.ensureControlPlane(ctx, s); err != nil {
		t.Fatal(err)
	}
	if why != "" {
		setStatus(t, client, external.StewardControlPlaneGVK, s.namespace, "prod", map[string]any{"conditions": []any{
			map[string]any{"type": "TenantControlPlaneCreated", "status": "False", "reason": "X", "message": why}}})
	}
	if tcp {
		tcp := &unstructured.Unstructured{}
		tcp.SetGroupVersionKind(external.TenantControlPlaneGVK)
		tcp.SetName("prod")
		tcp.SetNamespace(s.namespace)
		tcp.SetCreationTimestamp(metav1.NewTime(now.Add(-5 * time.Second)))
		if err := client.Tracker().Create(external.TenantControlPlaneGVR, tcp, s.namespace); err != nil {
			t.Fatal(err)
		}
	}
	s.recheckAfter = 0
	r, err := c.ensureControlPlane(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return r, s, kube
}

// TestEnsureControlPlaneNamesTheControllerNotRunning: a Steward control plane that waits while
// the Cluster API Steward provider or Steward itself is not running (scaled to 0: its
// leader-election Lease no longer renewed, or released) says at once which of the two, as a
// failure; before, it waited (WaitingForTenantControlPlane, TenantControlPlaneNotReady) and said
// ProviderNotResponding only after 90 s, naming neither, or, with Steward down and its webhook
// unanswered, ProviderUnavailable about a webhook. A Lease not renewed lately but not lapsed
// brings the cluster back when it would lapse; no Lease at all (leader election off, another
// engine) leaves the usual waits. ButlerConfig names steward-system as the controllers'.
func TestEnsureControlPlaneNamesTheControllerNotRunning(t *testing.T) {
	now := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)
	const provider, stewardLease = "steward.controlplane.cluster.x-k8s.io", "steward.butlerlabs.dev"
	type want struct {
		reason   string
		failed   bool
		contains []string
		recheck  time.Duration // the recheck the Leases ask for (0: none beyond the silence's)
	}
	for _, tc := range []struct {
		name   string
		leases []runtime.Object
		tcp    bool   // a TenantControlPlane without status exists
		why    string // the provider's TenantControlPlaneCreated False message
		want   want
	}{
		{"the provider scaled to 0", []runtime.Object{lease("steward-system", provider, "capi-1", now.Add(-40*time.Second)),
			lease("steward-system", stewardLease, "steward-1", now.Add(-time.Second))}, false, "",
			want{"ProviderNotRunning", true, []string{"control plane provider steward: the Cluster API Steward provider is not running",
				"Lease steward-system/" + provider + " last renewed 40s ago"}, 0}},
		{"Steward released its Lease", []runtime.Object{lease("steward-system", provider, "capi-1", now.Add(-time.Second)),
			lease("steward-system", stewardLease, "", now.Add(-30*time.Second))}, true, "",
			want{"ProviderNotRunning", true, []string{"control plane provider steward: Steward is not running",
				"Lease steward-system/" + stewardLease + " released 30s ago"}, 0}},
		{"Steward's webhook unanswered, its Lease lapsed", []runtime.Object{lease("steward-system", provider, "capi-1", now.Add(-time.Second)),
			lease("steward-system", stewardLease, "steward-1", now.Add(-time.Minute))}, false, webhookDown,
			want{"ProviderNotRunning", true, []string{"Steward is not running", "last renewed 1m0s ago"}, 0}},
		{"both running", []runtime.Object{lease("steward-system", provider, "capi-1", now.Add(-time.Second)),
			lease("steward-system", stewardLease, "steward-1", now.Add(-2*time.Second))}, false, "",
			want{"WaitingForTenantControlPlane", false, nil, 0}},
		{"a stale leader elsewhere, a live one here", []runtime.Object{lease("old", provider, "capi-0", now.Add(-time.Hour)),
			lease("steward-system", provider, "capi-1", now.Add(-time.Second))}, false, "",
			want{"WaitingForTenantControlPlane", false, nil, 0}},
		{"the provider's renewal 12 s old", []runtime.Object{lease("steward-system", provider, "capi-1", now.Add(-12*time.Second))}, false, "",
			want{"WaitingForTenantControlPlane", false, nil, 8 * time.Second}},
		{"no Lease", nil, false, "", want{"WaitingForTenantControlPlane", false, nil, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, s, _ := controlPlaneLeases(t, now, []string{"steward-system"}, tc.leases, tc.tcp, tc.why)
			if r.Reason != tc.want.reason || r.Failed != tc.want.failed || r.Done {
				t.Fatalf("%+v, want reason %s, failed %v", r, tc.want.reason, tc.want.failed)
			}
			for _, w := range tc.want.contains {
				if !strings.Contains(r.Message, w) {
					t.Errorf("message %q lacks %q", r.Message, w)
				}
			}
			// The usual waits ask to look again when the provider's silence would be named
			// (90 s less the object's age); a Lease about to lapse asks sooner.
			if tc.want.recheck != 0 && s.recheckAfter != tc.want.recheck {
				t.Errorf("recheck after %s, want %s: the Lease lapses then, and nothing else would say so", s.recheckAfter, tc.want.recheck)
			}
			if tc.want.recheck == 0 && !tc.want.failed && s.recheckAfter < 30*time.Second {
				t.Errorf("recheck after %s for running controllers: the Leases ask for none", s.recheckAfter)
			}
		})
	}
}

// TestForgedControllerLeases is docs/security.md's attacker who may create Leases in some
// namespace of the management cluster other than the controllers' (ButlerConfig
// spec.controlPlaneProviderNamespaces, steward-system here). A lapsed Lease named as the
// provider's or Steward's there must not fail the cluster while the real controllers run without
// leader election (no Lease in steward-system); a fresh one there must not hide the real one
// lapsed or released in steward-system; with no namespace named, no Lease is read at all. The
// Leases are read with a get in each named namespace, never a list across namespaces. Before,
// butler listed them by name in every namespace: the lapsed forgeries failed the cluster
// (ProviderNotRunning) and the fresh ones hid a controller that was down.
func TestForgedControllerLeases(t *testing.T) {
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	const provider, stewardLease = "steward.controlplane.cluster.x-k8s.io", "steward.butlerlabs.dev"
	named := []string{"steward-system"}
	for _, tc := range []struct {
		name       string
		namespaces []string
		leases     []runtime.Object
		reason     string
		contains   string // in the message of a ProviderNotRunning
	}{
		{"a lapsed provider Lease elsewhere, none in steward-system", named,
			[]runtime.Object{lease("attacker", provider, "forged", now.Add(-time.Hour))}, "WaitingForTenantControlPlane", ""},
		{"a released Steward Lease elsewhere, none in steward-system", named,
			[]runtime.Object{lease("attacker", stewardLease, "", now.Add(-time.Hour))}, "WaitingForTenantControlPlane", ""},
		{"a fresh provider Lease elsewhere, the real one lapsed", named, []runtime.Object{lease("attacker", provider, "forged", now),
			lease("steward-system", provider, "capi-1", now.Add(-40*time.Second))},
			"ProviderNotRunning", "the Cluster API Steward provider is not running: its leader-election Lease steward-system/" + provider + " last renewed 40s ago"},
		{"a fresh Steward Lease elsewhere, the real one released", named, []runtime.Object{lease("attacker", stewardLease, "forged", now),
			lease("steward-system", provider, "capi-1", now), lease("steward-system", stewardLease, "", now.Add(-30*time.Second))},
			"ProviderNotRunning", "Steward is not running: its leader-election Lease steward-system/" + stewardLease + " released 30s ago"},
		{"no namespace named: the lapsed Lease in steward-system is not read", nil,
			[]runtime.Object{lease("steward-system", provider, "capi-1", now.Add(-40*time.Second))}, "WaitingForTenantControlPlane", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _, kube := controlPlaneLeases(t, now, tc.namespaces, tc.leases, false, "")
			failed := tc.reason == "ProviderNotRunning"
			if r.Reason != tc.reason || r.Failed != failed || r.Done {
				t.Fatalf("%+v, want reason %s, failed %v", r, tc.reason, failed)
			}
			if !strings.Contains(r.Message, tc.contains) {
				t.Errorf("message %q lacks %q", r.Message, tc.contains)
			}
			for _, a := range kube.Actions() {
				if a.GetVerb() != "get" || !slices.Contains(tc.namespaces, a.GetNamespace()) {
					t.Errorf("%s leases in namespace %q: want only gets in %q", a.GetVerb(), a.GetNamespace(), tc.namespaces)
				}
			}
		})
	}
}

// TestNudgeMissedWake: during a wake (the TenantControlPlane Sleeping, the StewardControlPlane
// asking for replicas), a spec generation the provider's conditions have not observed gets an
// annotation written once it has waited providerNudgeAfter, and again after as long; none before,
// and none once the provider has observed it. Before, nothing was written: capi-steward, having
// found its cached Cluster still paused, never looked again (docs/providers.md item 22).
func TestNudgeMissedWake(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 11, 21, 26, 0, time.UTC))
	objs, client := fakeObjects(t)
	c := &Controller{objects: objs, clock: clk}
	s := stepState(v1alpha1.ProviderLocal)
	ctx := context.Background()
	if _, err := c.ensureControlPlane(ctx, s); err != nil {
		t.Fatal(err)
	}
	scpGVR := external.MustGVR(external.StewardControlPlaneGVK)
	setGeneration := func(gen, observed int64) {
		obj, err := client.Tracker().Get(scpGVR, s.namespace, "prod")
		if err != nil {
			t.Fatal(err)
		}
		u := obj.(*unstructured.Unstructured).DeepCopy()
		u.SetGeneration(gen)
		u.SetUID("scp-uid")
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "TenantControlPlaneCreated", "status": "True",
			"reason": "Succeeded", "observedGeneration": observed}}}
		if err := client.Tracker().Update(scpGVR, u, s.namespace); err != nil {
			t.Fatal(err)
		}
	}
	nudged := func() string {
		obj, err := client.Tracker().Get(scpGVR, s.namespace, "prod")
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*unstructured.Unstructured).GetAnnotations()[nudgeAnnotation]
	}
	tcp := &unstructured.Unstructured{}
	tcp.SetGroupVersionKind(external.TenantControlPlaneGVK)
	tcp.SetName("prod")
	tcp.SetNamespace(s.namespace)
	tcp.Object["status"] = map[string]any{"kubernetesResources": map[string]any{"version": map[string]any{"version": "v1.36.3", "status": tcpSleeping}}}
	if err := client.Tracker().Create(external.TenantControlPlaneGVR, tcp, s.namespace); err != nil {
		t.Fatal(err)
	}
	setGeneration(5, 4)
	step := func(d time.Duration) {
		clk.Step(d)
		s.recheckAfter = 0
		if _, err := c.ensureControlPlane(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	step(0)
	if got := nudged(); got != "" || s.recheckAfter != providerNudgeAfter {
		t.Fatalf("first look: nudged %q, recheck after %s; want none yet, a recheck in %s", got, s.recheckAfter, providerNudgeAfter)
	}
	step(4 * time.Second)
	if got := nudged(); got != "" || s.recheckAfter != 6*time.Second {
		t.Fatalf("4 s later: nudged %q, recheck after %s; want none yet, a recheck in 6s", got, s.recheckAfter)
	}
	step(6 * time.Second)
	first := nudged()
	if first == "" {
		t.Fatal("generation 5 unobserved for 10 s during a wake: no nudge")
	}
	step(10 * time.Second)
	if got := nudged(); got == first {
		t.Errorf("still unobserved 10 s after the nudge: not nudged again (%q)", got)
	}
	setGeneration(5, 5)
	before := nudged()
	step(30 * time.Second)
	if got := nudged(); got != before {
		t.Errorf("nudged again (%q) once the provider observed the generation", got)
	}
}
