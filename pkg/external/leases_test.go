package external

import (
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestChartGrantsControllerLeases: butler-apiserver's ClusterRole (the chart's rendering in
// artifacts/deploy) reads Leases only with a get of the names ControllerLeases knows, so a Lease
// name added there without the chart would be refused, and a list of every Lease is not granted.
func TestChartGrantsControllerLeases(t *testing.T) {
	data, err := os.ReadFile("../../artifacts/deploy/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range ControllerLeases(StewardControlPlaneGVK.Kind) {
		want = append(want, l.Name)
	}
	found := false
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil || role.Kind != "ClusterRole" || role.Name != "butler-apiserver" {
			continue
		}
		for _, r := range role.Rules {
			if !slices.Contains(r.Resources, "leases") {
				continue
			}
			found = true
			if !slices.Equal(r.Verbs, []string{"get"}) || !slices.Equal(r.ResourceNames, want) {
				t.Errorf("butler-apiserver's ClusterRole grants %v on leases %v, want [get] on %v", r.Verbs, r.ResourceNames, want)
			}
		}
	}
	if !found {
		t.Error("butler-apiserver's ClusterRole grants no Leases: the controllers' Leases cannot be read")
	}
}
