package plane

import (
	"strings"
	"testing"

	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// checkBreakGlass tries tenantclusters/breakglasskubeconfig on a Team's ready cluster: the
// Team's admin (admin of the cluster already) is refused by RBAC naming the subresource; a
// platform admin outside the Team, bound to butler-platform-breakglass, gets a kubeconfig that is
// cluster-admin in the tenant under an identity of their own, and an Event on the TenantCluster
// names them and the expiry.
func checkBreakGlass(t *testing.T, team, name, teamAdmin string) {
	t.Helper()
	_, _, out, err := framework.MintAs(t, team, name, "breakglasskubeconfig", teamAdmin)
	if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, `cannot create resource "tenantclusters/breakglasskubeconfig"`) {
		t.Errorf("the Team's admin %s minted a break-glass kubeconfig: %v\n%s", teamAdmin, err, out)
	}
	framework.MustKubectl(t, "create", "clusterrolebinding", "e2e-breakglass-pat", "--clusterrole=butler-platform-breakglass", "--user=pat")
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "clusterrolebinding", "e2e-breakglass-pat") })
	// pat is no member: the member's subresource stays closed to them.
	if _, _, out, err := framework.MintAs(t, team, name, "kubeconfig", "pat"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("pat (platform admin, no member) minted a member's kubeconfig: %v\n%s", err, out)
	}
	path, identity, out, err := framework.MintAs(t, team, name, "breakglasskubeconfig", "pat")
	if err != nil || identity != "butler:platform-admin:pat" {
		t.Fatalf("pat's break-glass kubeconfig: identity %q, %v\n%s", identity, err, out)
	}
	if out, err := framework.KubectlAs(t, path, "", "auth", "can-i", "*", "*"); err != nil || strings.TrimSpace(out) != "yes" {
		t.Errorf("pat in the tenant: can-i * * = %q %v, want yes (cluster-admin)", out, err)
	}
	events, err := framework.Kubectl(t, "get", "events", "-n", team, "--field-selector", "reason=BreakGlassKubeconfig,involvedObject.name="+name,
		"-o", "jsonpath={.items[*].message}")
	if err != nil || !strings.Contains(events, `"pat" minted a break-glass kubeconfig: cluster-admin in the tenant as butler:platform-admin:pat until `) {
		t.Errorf("no Event records pat's break-glass kubeconfig: %v\n%s", err, events)
	}
}
