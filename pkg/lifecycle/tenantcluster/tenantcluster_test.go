package tenantcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

func indexer(objs ...runtime.Object) cache.Indexer {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		_ = idx.Add(o)
	}
	return idx
}

func cluster() *v1alpha1.TenantCluster {
	return &v1alpha1.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a", UID: "0123456789abcdef", Generation: 3},
		Spec: v1alpha1.TenantClusterSpec{KubernetesVersion: "v1.36.3",
			ProviderConfigRef: &v1alpha1.NamespacedObjectReference{Name: "lab"},
			Workers:           v1alpha1.WorkersSpec{Replicas: 3}},
	}
}

func TestTenantNamespace(t *testing.T) {
	if got := TenantNamespace(cluster()); got != "prod-01234567" {
		t.Errorf("got %q", got)
	}
}

func TestEnsureProvider(t *testing.T) {
	ready := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: "team-a"},
		Spec: v1alpha1.ProviderConfigSpec{Provider: v1alpha1.ProviderLocal}, Status: v1alpha1.ProviderConfigStatus{Ready: true}}
	notReady := ready.DeepCopy()
	notReady.Status = v1alpha1.ProviderConfigStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: "False", Message: "credentials Secret x/y does not exist"}}}
	theirs := ready.DeepCopy()
	theirs.Namespace = "team-b"
	theirs.Spec.Scope = v1alpha1.ProviderScope{Type: v1alpha1.ScopeTeam, TeamRef: &v1alpha1.LocalObjectReference{Name: "team-b"}}
	shared := theirs.DeepCopy()
	shared.Spec.Scope = v1alpha1.ProviderScope{Type: v1alpha1.ScopePlatform}
	for _, tc := range []struct {
		name       string
		refNS      string
		pcs        []runtime.Object
		wantDone   bool
		wantReason string
		wantInMsg  string
	}{
		{"missing", "", nil, false, "ProviderConfigNotFound", "ProviderConfig team-a/lab does not exist"},
		{"not ready", "", []runtime.Object{notReady}, false, "ProviderConfigNotReady", "credentials Secret x/y does not exist"},
		{"ready", "", []runtime.Object{ready}, true, "ProviderConfigReady", "(local)"},
		{"another team's", "team-b", []runtime.Object{theirs}, false, "ProviderConfigNotShared",
			`ProviderConfig team-b/lab does not exist or is not shared with namespace "team-a": a TenantCluster may use`},
		{"missing in another namespace", "team-b", nil, false, "ProviderConfigNotShared", "does not exist or is not shared"},
		{"shared with the platform", "team-b", []runtime.Object{shared}, true, "ProviderConfigReady", "team-b/lab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{providers: listers.NewProviderConfigLister(indexer(tc.pcs...)),
				configs: listers.NewButlerConfigLister(indexer()), teams: listers.NewTeamLister(indexer())}
			tenant := cluster()
			tenant.Spec.ProviderConfigRef.Namespace = tc.refNS
			s := c.newState(tenant)
			r, err := c.ensureProvider(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if r.Done != tc.wantDone || r.Reason != tc.wantReason || !strings.Contains(r.Message, tc.wantInMsg) {
				t.Errorf("result %+v", r)
			}
			if r.Failed == tc.wantDone {
				t.Errorf("failed %v, want %v", r.Failed, !tc.wantDone)
			}
			if tc.wantDone && s.in.Provider == nil {
				t.Error("the ProviderConfig is not in the builders' input")
			}
		})
	}
}

func TestProviderRefFallsBackToTeamThenButlerConfig(t *testing.T) {
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: v1alpha1.TeamSpec{ProviderConfigRef: &v1alpha1.NamespacedObjectReference{Name: "team-pc", Namespace: "infra"}}}
	cfg := &v1alpha1.ButlerConfig{ObjectMeta: metav1.ObjectMeta{Name: "butler"},
		Spec: v1alpha1.ButlerConfigSpec{DefaultProviderConfigRef: &v1alpha1.NamespacedObjectReference{Name: "default-pc", Namespace: "butler-system"}}}
	c := &Controller{teams: listers.NewTeamLister(indexer(team)), configs: listers.NewButlerConfigLister(indexer(cfg))}
	tc := cluster()
	tc.Spec.ProviderConfigRef = nil
	if got, own := c.providerRef(tc); got.Name != "default-pc" || got.Namespace != "butler-system" || own {
		t.Errorf("no team: %+v", got)
	}
	tc.Spec.TeamRef = &v1alpha1.LocalObjectReference{Name: "team-a"}
	if got, own := c.providerRef(tc); got.Name != "team-pc" || got.Namespace != "infra" || own {
		t.Errorf("team: %+v", got)
	}
	// A teamRef naming another namespace's Team selects nothing of that Team.
	other := tc.DeepCopy()
	other.Namespace = "team-b"
	if got, _ := c.providerRef(other); got.Name != "default-pc" {
		t.Errorf("another team's teamRef: %+v", got)
	}
	tc.Spec.ProviderConfigRef = &v1alpha1.NamespacedObjectReference{Name: "own"}
	if got, own := c.providerRef(tc); got.Name != "own" || got.Namespace != "team-a" || !own {
		t.Errorf("own: %+v", got)
	}
}

func TestEnsureNetworkAllocatesFromPoolsInPriorityOrder(t *testing.T) {
	pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: "infra"},
		Spec: v1alpha1.ProviderConfigSpec{Provider: v1alpha1.ProviderProxmox, Network: v1alpha1.ProviderNetwork{
			Mode:     v1alpha1.NetworkModeIPAM,
			PoolRefs: []v1alpha1.PoolReference{{Name: "second", Priority: 2}, {Name: "first", Priority: 1}},
		}}}
	client := butlerfake.NewSimpleClientset()
	c := &Controller{butler: client, allocations: listers.NewIPAllocationLister(indexer())}
	s := c.newState(cluster())
	s.in.Provider = pc
	r, err := c.ensureNetwork(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	// The fake stores what it is given: Pending, as a real store would not answer.
	if r.Done || r.Reason != "Allocating" {
		t.Errorf("result %+v", r)
	}
	list, _ := client.ButlerV1alpha1().IPAllocations("infra").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 2 {
		t.Fatalf("%d allocations, want 2", len(list.Items))
	}
	for _, a := range list.Items {
		if a.Spec.PoolRef.Name != "first" || a.Spec.TenantClusterRef.Name != "prod" || a.Labels[external.TenantClusterLabel] != "prod" {
			t.Errorf("allocation %s: pool %s ref %+v labels %v", a.Name, a.Spec.PoolRef.Name, a.Spec.TenantClusterRef, a.Labels)
		}
		switch a.Name {
		case "prod-01234567-nodes":
			// Three workers and the one more a rollout makes.
			if ptr.Deref(a.Spec.Count, 0) != 4 || a.Spec.Type != v1alpha1.IPAllocationNodes {
				t.Errorf("nodes allocation %+v", a.Spec)
			}
		case "prod-01234567-lb":
			if ptr.Deref(a.Spec.Count, 0) != 8 || a.Spec.Type != v1alpha1.IPAllocationLoadBalancer {
				t.Errorf("lb allocation %+v", a.Spec)
			}
		default:
			t.Errorf("unexpected allocation %s", a.Name)
		}
	}
	if len(s.allocationRefs) != 2 {
		t.Errorf("refs %v", s.allocationRefs)
	}
}

func TestEnsureNetworkInCloudModeNeedsNothing(t *testing.T) {
	c := &Controller{}
	s := c.newState(cluster())
	s.in.Provider = &v1alpha1.ProviderConfig{Spec: v1alpha1.ProviderConfigSpec{Provider: v1alpha1.ProviderAWS}}
	r, err := c.ensureNetwork(context.Background(), s)
	if err != nil || !r.Done {
		t.Fatalf("%+v %v", r, err)
	}
}

func outcomeOf(results map[string]steps.Result, order ...string) steps.Outcome {
	out := steps.Outcome{Results: results}
	for _, name := range order {
		r := results[name]
		if r.Done {
			out.Done++
		} else if out.First == "" {
			out.First = name
		}
		if r.Failed && !out.Failed {
			out.FirstFailed = name
		}
		out.Failed = out.Failed || r.Failed
	}
	return out
}

func TestStatusPhases(t *testing.T) {
	order := []string{stepProvider, stepNamespace, stepNetwork, stepInfrastructure, stepControlPlane, stepWorkers, stepAddons}
	all := func(override map[string]steps.Result) map[string]steps.Result {
		m := map[string]steps.Result{}
		for _, n := range order {
			m[n] = steps.Ready("Ready", "ok")
		}
		for k, v := range override {
			m[k] = v
		}
		return m
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := &Controller{clock: testingclock.NewFakePassiveClock(now)}
	c.plan = c.steps()
	for _, tc := range []struct {
		name      string
		prev      v1alpha1.TenantClusterPhase
		results   map[string]steps.Result
		wantPhase v1alpha1.TenantClusterPhase
		wantOp    string
		wantReady metav1.ConditionStatus
	}{
		{"control plane coming up", "", all(map[string]steps.Result{stepControlPlane: steps.Waiting("TenantControlPlaneNotReady", "TenantControlPlane x/prod is Provisioning")}),
			v1alpha1.TenantClusterProvisioning, "Create/Processing", metav1.ConditionFalse},
		{"addons left", "", all(map[string]steps.Result{stepAddons: steps.Waiting("Installing", "1 of 2")}),
			v1alpha1.TenantClusterInstalling, "Create/Processing", metav1.ConditionFalse},
		{"all done", v1alpha1.TenantClusterInstalling, all(nil), v1alpha1.TenantClusterReady, "Create/Succeeded", metav1.ConditionTrue},
		{"a ready cluster scales", v1alpha1.TenantClusterReady, all(map[string]steps.Result{stepWorkers: steps.Waiting("WorkersNotReady", "3 of 5")}),
			v1alpha1.TenantClusterUpdating, "Reconcile/Processing", metav1.ConditionFalse},
		{"provider config missing", "", all(map[string]steps.Result{stepProvider: steps.Failure("ProviderConfigNotFound", "ProviderConfig team-a/lab does not exist")}),
			v1alpha1.TenantClusterFailed, "Create/Failed", metav1.ConditionFalse},
		{"an addon fails while the workers roll", v1alpha1.TenantClusterUpdating, all(map[string]steps.Result{
			stepWorkers: steps.Waiting("WorkersNotReady", "rolling to v1.30.2"), stepAddons: steps.Failure("AddonFailed", "broken: refused")}),
			v1alpha1.TenantClusterFailed, "Reconcile/Failed", metav1.ConditionFalse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := cluster()
			prev.Status.Phase = tc.prev
			out := outcomeOf(tc.results, order...)
			st := c.status(prev, c.newState(prev), out, nil)
			if st.Phase != tc.wantPhase {
				t.Errorf("phase %s, want %s", st.Phase, tc.wantPhase)
			}
			if got := st.LastOperation.Type + "/" + st.LastOperation.State; got != tc.wantOp {
				t.Errorf("lastOperation %s, want %s", got, tc.wantOp)
			}
			ready := meta.FindStatusCondition(st.Conditions, ConditionReady)
			if ready == nil || ready.Status != tc.wantReady || ready.ObservedGeneration != 3 {
				t.Fatalf("Ready %+v", ready)
			}
			if tc.wantReady == metav1.ConditionFalse {
				// Ready carries why: the failed step when one failed, else the first not done.
				first := tc.results[out.First]
				for _, n := range order {
					if tc.results[n].Failed {
						first = tc.results[n]
						break
					}
				}
				if ready.Reason != first.Reason || !strings.Contains(ready.Message, first.Message) || !strings.Contains(st.LastOperation.Description, first.Message) {
					t.Errorf("Ready %+v / lastOperation %+v do not carry %+v", ready, st.LastOperation, first)
				}
			}
			if st.ObservedGeneration != 3 || st.TenantNamespace != "prod-01234567" {
				t.Errorf("observedGeneration %d tenantNamespace %q", st.ObservedGeneration, st.TenantNamespace)
			}
			// Unchanged input, unchanged status: no write loop.
			prev.Status = *st
			if again := c.status(prev, c.newState(prev), out, nil); again.LastOperation.LastUpdateTime != st.LastOperation.LastUpdateTime {
				t.Error("lastOperation's time moved without a change")
			}
		})
	}
}

// A paused cluster is left exactly as it is: no finalizer, no status, no object.
func TestReconcilePausedWritesNothing(t *testing.T) {
	tc := cluster()
	tc.Annotations = map[string]string{external.TenantClusterPausedAnnotation: "true"}
	client := butlerfake.NewSimpleClientset(tc)
	c := &Controller{butler: client, clusters: listers.NewTenantClusterLister(indexer(tc))}
	if err := c.Reconcile(context.Background(), "team-a/prod"); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("a paused cluster got a %s of %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestEnsureNetworkHoldsNoNodeAddressesNoMachineTakes: in ipam mode a Harvester cluster holds its
// load balancer range only. Its VMs cannot be handed addresses (CAPK), so a nodes allocation
// would be addresses held for nothing while NetworkReady said "allocated"; one left from before
// is given back, and the condition says why the nodes have none.
func TestEnsureNetworkHoldsNoNodeAddressesNoMachineTakes(t *testing.T) {
	pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: "infra"},
		Spec: v1alpha1.ProviderConfigSpec{Provider: v1alpha1.ProviderHarvester, Network: v1alpha1.ProviderNetwork{
			Mode: v1alpha1.NetworkModeIPAM, PoolRefs: []v1alpha1.PoolReference{{Name: "first"}},
		}}}
	allocated := func(name string, typ v1alpha1.IPAllocationType, start, end string) *v1alpha1.IPAllocation {
		return &v1alpha1.IPAllocation{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "infra"},
			Spec:   v1alpha1.IPAllocationSpec{PoolRef: v1alpha1.LocalObjectReference{Name: "first"}, Type: typ},
			Status: v1alpha1.IPAllocationStatus{Phase: v1alpha1.IPAllocationAllocated, StartAddress: start, EndAddress: end}}
	}
	lb := allocated("prod-01234567-lb", v1alpha1.IPAllocationLoadBalancer, "10.0.0.100", "10.0.0.107")
	stale := allocated("prod-01234567-nodes", v1alpha1.IPAllocationNodes, "10.0.0.10", "10.0.0.12")
	client := butlerfake.NewSimpleClientset(lb, stale)
	c := &Controller{butler: client, allocations: listers.NewIPAllocationLister(indexer(lb, stale))}
	s := c.newState(cluster())
	s.in.Provider = pc
	r, err := c.ensureNetwork(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Done || !strings.Contains(r.Message, "loadbalancer 10.0.0.100-10.0.0.107") ||
		!strings.Contains(r.Message, "no node addresses from the pools (harvester machines cannot take them") {
		t.Errorf("result %+v", r)
	}
	if len(s.allocationRefs) != 1 || s.allocationRefs[0].Name != lb.Name {
		t.Errorf("allocationRefs %v, want the load balancer's only", s.allocationRefs)
	}
	list, _ := client.ButlerV1alpha1().IPAllocations("infra").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 1 || list.Items[0].Name != lb.Name {
		t.Errorf("allocations left %v, want the load balancer's only", list.Items)
	}
}
