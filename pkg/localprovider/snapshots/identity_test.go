package snapshots

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/snapshot"
)

// What carries the source's identity is dropped from a clone, whatever else stays; Secrets are
// read as kube-apiserver stores them (protobuf).
func TestKeepForNewIdentity(t *testing.T) {
	secret := func(typ corev1.SecretType) []byte { return secretOf(t, typ, "") }
	for _, c := range []struct {
		key   string
		value []byte
		keep  bool
	}{
		{"minions/node-1", nil, false},
		{"leases/kube-node-lease/node-1", nil, false},
		{"leases/kube-system/kube-controller-manager", nil, false},
		{"certificatesigningrequests/csr-1", nil, false},
		{"services/endpoints/default/kubernetes", nil, false},
		{"endpointslices/default/kubernetes", nil, false},
		{"configmaps/app/kube-root-ca.crt", nil, false},
		{"secrets/kube-system/bootstrap-token-abcdef", secret(corev1.SecretTypeBootstrapToken), false},
		{"secrets/app/builder-token", secret(corev1.SecretTypeServiceAccountToken), false},
		{"secrets/app/db", secret(corev1.SecretTypeOpaque), true},
		{"clusterrolebindings/butler:team-admins", nil, false},
		{"clusterrolebindings/butler:platform-admins", nil, false},
		{"rolebindings/app/butler:team-operators", nil, false},
		{"rolebindings/app/deploy-bot", nil, true},
		{"clusterrolebindings/cluster-admin", nil, true},
		{"configmaps/app/settings", nil, true},
		{"services/specs/default/kubernetes", nil, true},
		{"deployments/app/hello", nil, true},
		{"example.com/widgets/app/w-1", []byte(`{"kind":"Widget"}`), true},
	} {
		if got := keepForNewIdentity(snapshot.Record{Key: c.key, Value: c.value}); got != c.keep {
			t.Errorf("%s: keep %v, want %v", c.key, got, c.keep)
		}
	}
}
