package providerconfig

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func TestWarningsOnIPAMWithoutStaticNodeAddresses(t *testing.T) {
	s := NewStrategy(nil, nil)
	for _, tc := range []struct {
		provider butler.ProviderType
		mode     butler.NetworkMode
		want     string
	}{
		{butler.ProviderHarvester, butler.NetworkModeIPAM, "ipam gives harvester clusters load-balancer addresses from the pools, not node addresses"},
		{butler.ProviderNutanix, butler.NetworkModeIPAM, "a NutanixMachine has no static address field"},
		{butler.ProviderHarvester, butler.NetworkModeCloud, ""},
		{butler.ProviderProxmox, butler.NetworkModeIPAM, ""},
		{butler.ProviderAWS, butler.NetworkModeIPAM, "ipam gives aws clusters load-balancer addresses from the pools, not node addresses: the cloud gives"},
		{butler.ProviderAWS, butler.NetworkModeCloud, ""},
	} {
		pc := &butler.ProviderConfig{Spec: butler.ProviderConfigSpec{Provider: tc.provider, Network: butler.ProviderNetwork{Mode: tc.mode}}}
		for verb, got := range map[string][]string{
			"create": s.WarningsOnCreate(context.Background(), pc),
			"update": s.WarningsOnUpdate(context.Background(), pc, pc),
		} {
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("%s %s/%s: warnings %q, want none", verb, tc.provider, tc.mode, got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("%s %s/%s: warnings %q, want one containing %q", verb, tc.provider, tc.mode, got, tc.want)
			}
		}
	}
}

// teamsNamed reads Teams of the given names.
type teamsNamed []string

func (t teamsNamed) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	for _, n := range t {
		if n == name {
			return &butler.Team{ObjectMeta: metav1.ObjectMeta{Name: n}}, nil
		}
	}
	return nil, apierrors.NewNotFound(butler.Resource("teams"), name)
}

// A platform admin who writes Team B's credentials into B's namespace and leaves spec.scope
// unset (defaulted to platform) shares them with every Team: the write is warned, naming
// spec.scope and the Team; a scope of team, or a namespace no Team owns, is not.
func TestWarningsOnPlatformScopeInATeamsNamespace(t *testing.T) {
	s := NewStrategy(nil, teamsNamed{"team-b"})
	teamB := butler.ProviderScope{Type: butler.ScopeTeam, TeamRef: &butler.LocalObjectReference{Name: "team-b"}}
	for _, tc := range []struct {
		namespace string
		scope     butler.ProviderScope
		want      string
	}{
		{"team-b", butler.ProviderScope{Type: butler.ScopePlatform}, "spec.scope: this ProviderConfig is in Team team-b's namespace but its scope is platform (the default when spec.scope is unset), so every Team's clusters may use it and its credentials; set spec.scope to {type: team, teamRef: {name: team-b}}"},
		{"team-b", teamB, ""},
		{"butler-system", butler.ProviderScope{Type: butler.ScopePlatform}, ""},
	} {
		pc := &butler.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "harvester", Namespace: tc.namespace},
			Spec: butler.ProviderConfigSpec{Provider: butler.ProviderHarvester, Scope: tc.scope}}
		ctx := genericapirequest.WithNamespace(context.Background(), tc.namespace)
		for verb, got := range map[string][]string{
			"create": s.WarningsOnCreate(ctx, pc),
			"update": s.WarningsOnUpdate(ctx, pc, pc),
		} {
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("%s in %s, scope %v: warnings %q, want none", verb, tc.namespace, tc.scope, got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("%s in %s, scope %v: warnings %q, want one containing %q", verb, tc.namespace, tc.scope, got, tc.want)
			}
		}
	}
}
