package providerconfig

import (
	"context"
	"strings"
	"testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func TestWarningsOnIPAMWithoutStaticNodeAddresses(t *testing.T) {
	s := NewStrategy(nil)
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
