package admission

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	autoscaling "k8s.io/client-go/scale/scheme"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// fakeStore is a quota.Store over fixed objects; UpdateTeam applies in place.
type fakeStore struct {
	teams     map[string]*butler.Team
	config    *butler.ButlerConfig
	clusters  []butler.TenantCluster
	providers map[string]*butler.ProviderConfig
	addons    []butler.AddonDefinition
	snapshots map[string]*butler.TenantClusterSnapshot
	// strategies are UpdateStrategies by namespace/name.
	strategies map[string]*butler.UpdateStrategy
	// managementAddons are the ManagementAddons.
	managementAddons []butler.ManagementAddon
	writes           int
}

func (s *fakeStore) ManagementAddons(context.Context) ([]butler.ManagementAddon, error) {
	return s.managementAddons, nil
}

func (s *fakeStore) UpdateStrategy(_ context.Context, ns, name string) (*butler.UpdateStrategy, error) {
	return s.strategies[ns+"/"+name], nil
}

func (s *fakeStore) Snapshot(_ context.Context, ns, name string) (*butler.TenantClusterSnapshot, error) {
	if snap, ok := s.snapshots[ns+"/"+name]; ok {
		return snap.DeepCopy(), nil
	}
	return nil, nil
}

func (s *fakeStore) Snapshots(_ context.Context, ns string) ([]butler.TenantClusterSnapshot, error) {
	var out []butler.TenantClusterSnapshot
	for _, snap := range s.snapshots {
		if snap.Namespace == ns {
			out = append(out, *snap.DeepCopy())
		}
	}
	return out, nil
}

func (s *fakeStore) AddonDefinitions(context.Context) ([]butler.AddonDefinition, error) {
	return s.addons, nil
}

func (s *fakeStore) Team(_ context.Context, name string) (*butler.Team, error) {
	if t, ok := s.teams[name]; ok {
		return t.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(butler.Resource("teams"), name)
}
func (s *fakeStore) Config(context.Context) (*butler.ButlerConfig, error) { return s.config, nil }
func (s *fakeStore) Cluster(_ context.Context, ns, name string) (*butler.TenantCluster, error) {
	for i := range s.clusters {
		if s.clusters[i].Namespace == ns && s.clusters[i].Name == name {
			return s.clusters[i].DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(butler.Resource("tenantclusters"), name)
}
func (s *fakeStore) Clusters(_ context.Context, ns, _ string) ([]butler.TenantCluster, error) {
	var out []butler.TenantCluster
	for _, tc := range s.clusters {
		if tc.Namespace == ns || ns == "" {
			out = append(out, tc)
		}
	}
	return out, nil
}
func (s *fakeStore) ProviderConfig(_ context.Context, ns, name string) (*butler.ProviderConfig, error) {
	if p, ok := s.providers[ns+"/"+name]; ok {
		return p.DeepCopy(), nil
	}
	return nil, nil
}
func (s *fakeStore) UpdateProvider(_ context.Context, ns, name string, update func(*butler.ProviderConfig) error) error {
	pc := s.providers[ns+"/"+name].DeepCopy()
	if err := update(pc); err != nil {
		return err
	}
	s.providers[ns+"/"+name], s.writes = pc, s.writes+1
	return nil
}

func providerConfig(ns, name string, provider butler.ProviderType) *butler.ProviderConfig {
	return &butler.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: butler.ProviderConfigSpec{Provider: provider}}
}
func (s *fakeStore) UpdateTeam(_ context.Context, name string, update func(*butler.Team) error) error {
	t := s.teams[name].DeepCopy()
	if err := update(t); err != nil {
		return err
	}
	s.teams[name], s.writes = t, s.writes+1
	return nil
}

func tc(ns, name string, workers int32) *butler.TenantCluster {
	return &butler.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7"},
		Spec: butler.TenantClusterSpec{KubernetesVersion: "v1.31.4", Workers: butler.WorkersSpec{Replicas: workers},
			ProviderConfigRef: &butler.NamespacedObjectReference{Name: "hv"}},
	}
}

var (
	tcResource    = butler.Resource("tenantclusters").WithVersion("v1alpha1")
	taResource    = butler.Resource("tenantaddons").WithVersion("v1alpha1")
	teamsResource = butler.Resource("teams").WithVersion("v1alpha1")
)

func attrs(obj, old runtime.Object, ns, name string, res schema.GroupVersionResource, sub string, op admission.Operation, dryRun bool) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, schema.GroupVersionKind{}, ns, name, res, sub, op, nil, dryRun, &user.DefaultInfo{Name: "alice"})
}

func newStore() *fakeStore {
	return &fakeStore{
		teams: map[string]*butler.Team{
			"team-a": {ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: butler.TeamSpec{ResourceLimits: &butler.ResourceLimits{
				MaxClusters: ptr.To[int32](2), MaxWorkersPerCluster: ptr.To[int32](5), AllowedProviders: []string{"harvester"},
				DeniedAddons: []string{"traefik"}}}},
		},
		config:    &butler.ButlerConfig{Spec: butler.ButlerConfigSpec{DefaultTeamLimits: &butler.ResourceLimits{MaxTotalWorkers: ptr.To[int32](6)}}},
		clusters:  []butler.TenantCluster{*tc("team-a", "one", 3)},
		providers: map[string]*butler.ProviderConfig{"team-a/hv": providerConfig("team-a", "hv", butler.ProviderHarvester)},
	}
}

// chains caches one admission chain per store.
var chains = map[quota.Store]admission.ValidationInterface{}

func validate(t *testing.T, s quota.Store, a admission.Attributes) error {
	t.Helper()
	chain, ok := chains[s]
	if !ok {
		c, err := New(&quota.Ledger{Store: s}, adminAuthorizer, "")
		if err != nil {
			t.Fatal(err)
		}
		chain = c.(admission.ValidationInterface)
		chains[s] = chain
	}
	return chain.Validate(context.Background(), a, nil)
}

func expect(t *testing.T, err error, check func(error) bool, says string) {
	t.Helper()
	if err == nil && check == nil {
		return
	}
	if check == nil || !check(err) || !strings.Contains(err.Error(), says) {
		t.Errorf("got %v, want an error saying %q", err, says)
	}
}

func TestTeamLimits(t *testing.T) {
	s := newStore()
	create := func(obj *butler.TenantCluster, dry bool) error {
		return validate(t, s, attrs(obj, nil, obj.Namespace, obj.Name, tcResource, "", admission.Create, dry))
	}
	expect(t, create(tc("team-a", "big", 6), false), apierrors.IsForbidden, "maxWorkersPerCluster is 5, requested 6")
	expect(t, create(tc("team-a", "many", 4), false), apierrors.IsForbidden, "maxTotalWorkers is 6, in use 3, requested 4 (would be 7)")
	other := tc("team-a", "nutanix", 1)
	other.Spec.ProviderConfigRef.Name = "nx"
	expect(t, create(other, false), apierrors.IsForbidden, "allowedProviders are [harvester], requested nx")
	ingress := tc("team-a", "ingress", 1)
	ingress.Spec.Addons.Ingress = &butler.IngressAddon{}
	expect(t, create(ingress, false), apierrors.IsForbidden, "addon traefik is in deniedAddons [traefik]")

	// A dry run checks and writes nothing; a real create reserves on the Team.
	if err := create(tc("team-a", "two", 1), true); err != nil || s.writes != 0 {
		t.Fatalf("dry run: %v, %d writes", err, s.writes)
	}
	if err := create(tc("team-a", "two", 1), false); err != nil || s.writes != 1 || len(quota.Reservations(s.teams["team-a"])) != 1 {
		t.Fatalf("create: %v, %d writes, reservations %v", err, s.writes, quota.Reservations(s.teams["team-a"]))
	}
	// The reservation counts until the cluster is stored: a third cluster is refused.
	expect(t, create(tc("team-a", "three", 1), false), apierrors.IsForbidden, "maxClusters is 2, in use 2, requested 1")

	// Outside a team's namespace nothing applies.
	if err := create(tc("elsewhere", "big", 60), false); err != nil {
		t.Errorf("outside a team: %v", err)
	}

	// tenantclusters/scale: the Scale of the stored cluster.
	oldScale := &autoscaling.Scale{ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: "team-a", ResourceVersion: "7"}, Spec: autoscaling.ScaleSpec{Replicas: 3}}
	newScale := oldScale.DeepCopy()
	newScale.Spec.Replicas = 6
	err := validate(t, s, attrs(newScale, oldScale, "team-a", "one", tcResource, "scale", admission.Update, false))
	expect(t, err, apierrors.IsForbidden, "maxWorkersPerCluster is 5, requested 6")
	// 3 stored in "one" and 1 reserved for "two": 5 workers for "one" make 6 of 6.
	newScale.Spec.Replicas = 5
	if err := validate(t, s, attrs(newScale, oldScale, "team-a", "one", tcResource, "scale", admission.Update, false)); err != nil {
		t.Errorf("scale up to the limit: %v", err)
	}
	newScale.Spec.Replicas = 1
	if err := validate(t, s, attrs(newScale, oldScale, "team-a", "one", tcResource, "scale", admission.Update, false)); err != nil {
		t.Errorf("scaling down: %v", err)
	}

	// TenantAddons.
	ta := &butler.TenantAddon{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "t"}, Spec: butler.TenantAddonSpec{Addon: "traefik"}}
	expect(t, validate(t, s, attrs(ta, nil, "team-a", "t", taResource, "", admission.Create, false)), apierrors.IsForbidden, "addon traefik is in deniedAddons")

	// A team being deleted takes no new clusters.
	s.teams["team-a"].DeletionTimestamp = &metav1.Time{}
	expect(t, create(tc("team-a", "late", 1), false), apierrors.IsForbidden, `team "team-a" is being deleted`)
}

func TestMultiTenancy(t *testing.T) {
	s := newStore()
	create := func(obj *butler.TenantCluster) error {
		return validate(t, s, attrs(obj, nil, obj.Namespace, obj.Name, tcResource, "", admission.Create, false))
	}
	if err := create(tc("elsewhere", "x", 1)); err != nil {
		t.Errorf("Disabled mode: %v", err)
	}
	s.config.Spec.MultiTenancy.Mode = butler.MultiTenancyEnforced
	expect(t, create(tc("elsewhere", "x", 1)), apierrors.IsForbidden, `namespace "elsewhere" is not a Team's namespace`)
	wrong := tc("team-a", "x", 1)
	wrong.Spec.TeamRef = &butler.LocalObjectReference{Name: "team-b"}
	expect(t, create(wrong), apierrors.IsInvalid, "spec.teamRef.name")
	// In every mode: a teamRef selects that Team's ProviderConfig and limits.
	s.config.Spec.MultiTenancy.Mode = butler.MultiTenancyDisabled
	expect(t, create(wrong), apierrors.IsInvalid, `spec.teamRef.name: Invalid value: "team-b": must be "team-a"`)
	elsewhere := tc("elsewhere", "x", 1)
	elsewhere.Spec.TeamRef = &butler.LocalObjectReference{Name: "team-a"}
	expect(t, create(elsewhere), apierrors.IsInvalid, "spec.teamRef.name")
	s.config.Spec.MultiTenancy.Mode = butler.MultiTenancyEnforced
	right := tc("team-a", "x", 1)
	right.Spec.TeamRef = &butler.LocalObjectReference{Name: "team-a"}
	if err := create(right); err != nil {
		t.Errorf("right teamRef: %v", err)
	}
}

func TestTeamInUse(t *testing.T) {
	s := newStore()
	err := validate(t, s, attrs(nil, nil, "", "team-a", teamsResource, "", admission.Delete, false))
	expect(t, err, apierrors.IsConflict, "the team still has 1 tenant cluster(s): team-a/one; delete them first")
	s.clusters = nil
	if err := validate(t, s, attrs(nil, nil, "", "team-a", teamsResource, "", admission.Delete, false)); err != nil {
		t.Errorf("empty team: %v", err)
	}
}

// TestProviderSupport: a cluster whose machines cannot boot on its provider is a 422 naming the
// field and why, whether the ProviderConfig is the cluster's, its Team's or the default; a
// refused create reserves nothing.
func TestProviderSupport(t *testing.T) {
	s := newStore()
	s.providers["team-a/nx"] = &butler.ProviderConfig{Spec: butler.ProviderConfigSpec{Provider: butler.ProviderNutanix}}
	s.providers["infra/aws"] = &butler.ProviderConfig{Spec: butler.ProviderConfigSpec{Provider: butler.ProviderAWS}}
	s.teams["team-a"].Spec.ResourceLimits = nil
	create := func(obj *butler.TenantCluster) error {
		return validate(t, s, attrs(obj, nil, obj.Namespace, obj.Name, tcResource, "", admission.Create, false))
	}
	withOS := func(name, pc string, os butler.OSType) *butler.TenantCluster {
		c := tc("team-a", name, 1)
		c.Spec.ProviderConfigRef.Name = pc
		c.Spec.Workers.MachineTemplate.OS.Type = os
		return c
	}
	expect(t, create(withOS("br-hv", "hv", butler.OSBottlerocket)), apierrors.IsInvalid,
		"spec.workers.machineTemplate.os.type: Invalid value: \"bottlerocket\": bottlerocket machines cannot boot on provider harvester: Bottlerocket publishes images only for AWS")
	expect(t, create(withOS("fc-nx", "nx", butler.OSFlatcar)), apierrors.IsInvalid, "flatcar machines cannot boot on provider nutanix")
	if s.writes != 0 {
		t.Errorf("refused creates wrote the Team %d times", s.writes)
	}
	s.config.Spec.DefaultTeamLimits = nil
	for _, ok := range []*butler.TenantCluster{withOS("fc-hv", "hv", butler.OSFlatcar), withOS("talos-nx", "nx", butler.OSTalos), withOS("unknown-pc", "later", butler.OSBottlerocket)} {
		if err := create(ok); err != nil {
			t.Errorf("%s: %v", ok.Name, err)
		}
	}
	// The ButlerConfig's default, when neither the cluster nor its Team names one.
	s.config.Spec.DefaultProviderConfigRef = &butler.NamespacedObjectReference{Name: "aws", Namespace: "infra"}
	onDefault := withOS("br-default", "", butler.OSBottlerocket)
	onDefault.Spec.ProviderConfigRef = nil
	if err := create(onDefault); err != nil {
		t.Errorf("bottlerocket on the default (aws): %v", err)
	}
	s.teams["team-a"].Spec.ProviderConfigRef = &butler.NamespacedObjectReference{Name: "nx"}
	onDefault.Spec.TeamRef = &butler.LocalObjectReference{Name: "team-a"}
	expect(t, create(onDefault), apierrors.IsInvalid, "bottlerocket machines cannot boot on provider nutanix")
}

func TestProviderConfigUse(t *testing.T) {
	s := newStore()
	shared := providerConfig("platform", "shared", butler.ProviderHarvester)
	shared.Spec.Scope.Type = butler.ScopePlatform
	forA := providerConfig("platform", "for-a", butler.ProviderHarvester)
	forA.Spec.Scope = butler.ProviderScope{Type: butler.ScopeTeam, TeamRef: &butler.LocalObjectReference{Name: "team-a"}}
	theirs := providerConfig("team-b", "hv", butler.ProviderHarvester)
	theirs.Spec.Scope = butler.ProviderScope{Type: butler.ScopeTeam, TeamRef: &butler.LocalObjectReference{Name: "team-b"}}
	for _, pc := range []*butler.ProviderConfig{shared, forA, theirs} {
		s.providers[pc.Namespace+"/"+pc.Name] = pc
	}
	s.teams["team-a"].Spec.ResourceLimits, s.config.Spec.DefaultTeamLimits = nil, nil
	using := func(name, ns, pcNS, pcName string) *butler.TenantCluster {
		c := tc(ns, name, 1)
		c.Spec.ProviderConfigRef = &butler.NamespacedObjectReference{Namespace: pcNS, Name: pcName}
		return c
	}
	create := func(obj *butler.TenantCluster) error {
		return validate(t, s, attrs(obj, nil, obj.Namespace, obj.Name, tcResource, "", admission.Create, false))
	}
	const rule = "a TenantCluster may use a ProviderConfig in its own namespace, or one whose spec.scope is platform or names the cluster's Team"
	expect(t, create(using("x", "team-a", "team-b", "hv")), apierrors.IsForbidden,
		`ProviderConfig team-b/hv does not exist or is not shared with namespace "team-a": `+rule)
	expect(t, create(using("x", "team-a", "team-b", "missing")), apierrors.IsForbidden,
		`ProviderConfig team-b/missing does not exist or is not shared with namespace "team-a"`)
	for _, ok := range []*butler.TenantCluster{using("own", "team-a", "", "hv"), using("shared", "team-a", "platform", "shared"),
		using("for-a", "team-a", "platform", "for-a"), using("shared", "elsewhere", "platform", "shared")} {
		if err := create(ok); err != nil {
			t.Errorf("%s/%s using %s: %v", ok.Namespace, ok.Name, ok.Spec.ProviderConfigRef.Name, err)
		}
	}
	expect(t, create(using("x", "team-c", "platform", "for-a")), apierrors.IsForbidden, "is not shared with namespace \"team-c\"")

	// An update that keeps the reference is not checked again; one that changes it is.
	old := using("one", "team-a", "", "hv")
	changed := using("one", "team-a", "team-b", "hv")
	expect(t, validate(t, s, attrs(changed, old, "team-a", "one", tcResource, "", admission.Update, false)), apierrors.IsForbidden, "not shared")

	// Limits: maxClustersPerTeam counts the namespace's clusters that use it, reserved on it.
	shared.Spec.Limits = &butler.ProviderLimits{MaxClustersPerTeam: ptr.To[int32](1), MaxNodesPerTeam: ptr.To[int32](2)}
	if err := create(using("first", "team-a", "platform", "shared")); err != nil {
		t.Fatalf("first cluster within the limits: %v", err)
	}
	if n := len(quota.Reservations(s.providers["platform/shared"])); n != 1 {
		t.Fatalf("reservations on the ProviderConfig: %d, want 1", n)
	}
	expect(t, create(using("second", "team-a", "platform", "shared")), apierrors.IsForbidden,
		`exceeds the limits of ProviderConfig platform/shared for namespace "team-a": maxClustersPerTeam is 1, in use 1, requested 1 (would be 2)`)
	if err := create(using("second", "elsewhere", "platform", "shared")); err != nil {
		t.Errorf("another namespace has its own count: %v", err)
	}
	big := using("big", "team-c", "platform", "shared")
	big.Spec.Workers.Replicas = 3
	expect(t, create(big), apierrors.IsForbidden, "maxNodesPerTeam is 2, in use 0, requested 3 (would be 3)")
	// The Team's own ProviderConfig (through teamRef) and the platform default are not checked for sharing.
	s.teams["team-a"].Spec.ProviderConfigRef = &butler.NamespacedObjectReference{Namespace: "team-b", Name: "hv"}
	viaTeam := tc("team-a", "via-team", 1)
	viaTeam.Spec.ProviderConfigRef, viaTeam.Spec.TeamRef = nil, &butler.LocalObjectReference{Name: "team-a"}
	if err := create(viaTeam); err != nil {
		t.Errorf("the Team's ProviderConfig: %v", err)
	}
}

// adminAuthorizer allows "platform" everything and nobody else anything.
var adminAuthorizer = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "platform" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

func TestAddonSources(t *testing.T) {
	s := newStore()
	s.addons = []butler.AddonDefinition{{ObjectMeta: metav1.ObjectMeta{Name: "cilium"},
		Spec: butler.AddonDefinitionSpec{Chart: butler.ChartReference{Repository: "https://helm.cilium.io/", Name: "cilium"}}}}
	s.teams["team-a"].Spec.ResourceLimits = &butler.ResourceLimits{DeniedAddons: []string{"cilium"}}
	helm := func(ns, repository, chart string) *butler.TenantAddon {
		return &butler.TenantAddon{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"},
			Spec: butler.TenantAddonSpec{Helm: &butler.HelmChartSpec{Repository: repository, Chart: chart}}}
	}
	as := func(ta *butler.TenantAddon, name string) error {
		return validate(t, s, admission.NewAttributesRecord(ta, nil, schema.GroupVersionKind{}, ta.Namespace, ta.Name, taResource, "",
			admission.Create, nil, false, &user.DefaultInfo{Name: name}))
	}
	// A chart named like the catalog's, from elsewhere: not listed, whatever its name.
	expect(t, as(helm("elsewhere", "https://evil.example.com", "cilium"), "operator"), apierrors.IsForbidden,
		`spec.helm: chart "cilium" from repository "https://evil.example.com" is not in the platform's catalog`)
	if err := as(helm("elsewhere", "https://evil.example.com", "cilium"), "platform"); err != nil {
		t.Errorf("a platform admin installs any chart: %v", err)
	}
	// The listed repository and chart: allowed, and deniedAddons names it by its catalog name.
	if err := as(helm("elsewhere", "https://helm.cilium.io", "cilium"), "operator"); err != nil {
		t.Errorf("the listed repository and chart: %v", err)
	}
	expect(t, as(helm("team-a", "https://helm.cilium.io", "cilium"), "operator"), apierrors.IsForbidden, "addon cilium is in deniedAddons [cilium]")
	// allowedAddons: an unlisted chart matches no entry, even one of the same name.
	s.teams["team-a"].Spec.ResourceLimits = &butler.ResourceLimits{AllowedAddons: []string{"cilium"}}
	expect(t, as(helm("team-a", "https://evil.example.com", "cilium"), "platform"), apierrors.IsForbidden,
		"addon cilium from https://evil.example.com is not in allowedAddons [cilium]")
}
