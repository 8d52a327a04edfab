package snapshots

import (
	"bytes"
	"context"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/butlerdotdev/butler-apiserver/pkg/etcdtest"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
	"github.com/butlerdotdev/butler-apiserver/pkg/snapshot"
)

// After an in-place restore the Nodes are those of the Machines that exist: the snapshot was
// taken when Machine a's Node was there; a was replaced by b since. The restored data has b's
// Node and its heartbeat Lease (from the data replaced), not a's, and everything else from the
// snapshot. A clone has neither: its own Machines register their Nodes. The same for the Team's
// bindings: otto, an admin at the snapshot, was removed since; the restored data binds the
// admins of now from its first start (in the namespaces restored: app2, made since the
// snapshot, gets no binding), and a clone binds none of the source's Team. Every other RBAC
// object, ServiceAccount and service-account token Secret is also the tenant's of now: mallory,
// bound by a tenant admin at the snapshot and unbound since, is not bound again; nor does the
// ServiceAccount ci deleted since, or its token, come back. A namespace protected now stays
// protected: flux-system, labelled by a tenant admin after the snapshot, keeps the label (its
// other labels are the snapshot's), or operators would be bound where a privileged account runs.
func TestInPlaceRestoreKeepsTheMachinesNodesAndTheTeamsBindings(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Client(t)
	const live = "/t/"
	now := map[string]string{
		"minions/b":                               "node b",
		"leases/kube-node-lease/b":                "lease b",
		"configmaps/app/deleted-since":            "gone after the restore",
		"clusterrolebindings/butler:team-admins":  "alice",
		"rolebindings/app/butler:team-operators":  "operators of now",
		"rolebindings/app/deploy-bot":             "a binding of the team's own, of now",
		"rolebindings/app2/butler:team-operators": "operators of now in a namespace made since the snapshot",
		"clusterrolebindings/cluster-admin":       "cluster-admin of now",
		"serviceaccounts/app/default":             "default of now",
		"secrets/app/default-token":               string(secretOf(t, corev1.SecretTypeServiceAccountToken, "of now")),
		"secrets/app/db":                          string(secretOf(t, corev1.SecretTypeOpaque, "of now")),
		"namespaces/flux-system":                  string(namespaceObject(t, "flux-system", map[string]string{external.ProtectedNamespaceLabel: "true"})),
		"namespaces/app":                          string(namespaceObject(t, "app", map[string]string{"team": "now"})),
	}
	for k, v := range now {
		if _, err := c.Put(ctx, live+k, v); err != nil {
			t.Fatal(err)
		}
	}
	var data bytes.Buffer
	w, err := snapshot.NewWriter(&data, snapshot.Header{Prefix: live})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"configmaps/app/cm", "leases/kube-node-lease/a", "leases/kube-system/kube-scheduler", "minions/a", "pods/app/p",
		"clusterrolebindings/butler:team-admins", "clusterrolebindings/cluster-admin", "rolebindings/app/butler:team-operators",
		"rolebindings/app/deploy-bot", "rolebindings/app/mallory-admin", "clusterrolebindings/mallory", "roles/app/secrets-reader",
		"clusterroles/mallory-escalate", "serviceaccounts/app/ci", "serviceaccounts/app/default"} {
		if err := w.Write(snapshot.Record{Key: k, Value: []byte("snapshot " + k)}); err != nil {
			t.Fatal(err)
		}
	}
	for k, ns := range map[string][]byte{
		"namespaces/flux-system": namespaceObject(t, "flux-system", map[string]string{"owner": "snapshot"}),
		"namespaces/app":         namespaceObject(t, "app", map[string]string{"team": "snapshot"}),
	} {
		if err := w.Write(snapshot.Record{Key: k, Value: ns}); err != nil {
			t.Fatal(err)
		}
	}
	for k, typ := range map[string]corev1.SecretType{"secrets/app/ci-token": corev1.SecretTypeServiceAccountToken, "secrets/app/db": corev1.SecretTypeOpaque} {
		if err := w.Write(snapshot.Record{Key: k, Value: secretOf(t, typ, "snapshot")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	restore := func(inPlace bool, fresh string) map[string]string {
		t.Helper()
		r, err := snapshot.NewReader(bytes.NewReader(data.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		store := controlplane.TenantStore{Prefix: live, Client: c, Fresh: fresh}
		st, err := restoreData(ctx, store, r, inPlace)
		if err != nil {
			t.Fatal(err)
		}
		if inPlace && (st.Dropped != 0 || st.Written != 14) {
			t.Errorf("in place: %+v, want 14 written (6 of the snapshot, 8 of now), none dropped", st)
		}
		resp, err := c.Get(ctx, fresh, clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, kv := range resp.Kvs {
			got[string(kv.Key)[len(fresh):]] = string(kv.Value)
		}
		return got
	}

	got := restore(true, datastore.Generation(live, 1))
	want := map[string]string{
		"namespaces/app":                         string(namespaceObject(t, "app", map[string]string{"team": "snapshot"})),
		"namespaces/flux-system":                 string(namespaceObject(t, "flux-system", map[string]string{"owner": "snapshot", external.ProtectedNamespaceLabel: "true"})),
		"configmaps/app/cm":                      "snapshot configmaps/app/cm",
		"leases/kube-system/kube-scheduler":      "snapshot leases/kube-system/kube-scheduler",
		"pods/app/p":                             "snapshot pods/app/p",
		"minions/b":                              "node b",
		"leases/kube-node-lease/b":               "lease b",
		"clusterrolebindings/cluster-admin":      "cluster-admin of now",
		"rolebindings/app/deploy-bot":            "a binding of the team's own, of now",
		"clusterrolebindings/butler:team-admins": "alice",
		"rolebindings/app/butler:team-operators": "operators of now",
		"serviceaccounts/app/default":            "default of now",
		"secrets/app/default-token":              now["secrets/app/default-token"],
		"secrets/app/db":                         string(secretOf(t, corev1.SecretTypeOpaque, "snapshot")),
	}
	if len(got) != len(want) {
		t.Errorf("in place: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("in place: %s = %q, want %q", k, got[k], v)
		}
	}

	got = restore(false, datastore.Generation(live, 2))
	for k := range got {
		if strings.HasPrefix(k, "minions/") || strings.HasPrefix(k, "leases/kube-node-lease/") || strings.Contains(k, "/butler:") {
			t.Errorf("a new cluster has %s", k)
		}
	}
	if got["pods/app/p"] == "" || got["rolebindings/app/deploy-bot"] == "" || got["serviceaccounts/app/ci"] == "" {
		t.Errorf("a new cluster lacks the snapshot's pod: %v", got)
	}
}

// namespaceObject is a Namespace as kube-apiserver stores it (protobuf), with those labels.
func namespaceObject(t *testing.T, name string, labels map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(runtime.Object(ns), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// secretOf is a Secret of type typ as kube-apiserver stores it (protobuf), its data marked with
// from.
func secretOf(t *testing.T, typ corev1.SecretType, from string) []byte {
	t.Helper()
	var buf bytes.Buffer
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "app"},
		Type: typ, Data: map[string][]byte{"from": []byte(from)}}
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(runtime.Object(s), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An in-place restore of a snapshot taken before today's ValidatingAdmissionPolicy
// butler-api-endpoint (an older policy, one that let operators set spec.externalIPs, or none)
// would serve the snapshot's until the lifecycle's access step applies it again: operators are
// bound from the restored data's first start (their bindings are of now), so for that while
// they would write what today's policy refuses. The policy and its binding are of now, whatever
// the snapshot holds; a policy of the tenant's own is the snapshot's, as any other data.
func TestInPlaceRestoreKeepsTodaysAPIEndpointPolicy(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Client(t)
	const live = "/t/"
	policy, binding := "validatingadmissionpolicies/"+access.APIEndpointPolicy, "validatingadmissionpolicybindings/"+access.APIEndpointPolicy
	for k, v := range map[string]string{policy: "policy of now", binding: "binding of now",
		"validatingadmissionpolicies/tenants-own": "the tenant's own policy of now"} {
		if _, err := c.Put(ctx, live+k, v); err != nil {
			t.Fatal(err)
		}
	}
	for i, snap := range []map[string]string{
		{policy: "older policy", binding: "older binding", "validatingadmissionpolicies/tenants-own": "the tenant's own policy of the snapshot",
			"validatingadmissionpolicies/" + access.APIEndpointPolicy + "-x": "a policy named like it, of the snapshot"},
		{"configmaps/app/cm": "a snapshot taken before the policy"},
	} {
		var data bytes.Buffer
		w, err := snapshot.NewWriter(&data, snapshot.Header{Prefix: live})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range snap {
			if err := w.Write(snapshot.Record{Key: k, Value: []byte(v)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := snapshot.NewReader(bytes.NewReader(data.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		fresh := datastore.Generation(live, i+1)
		if _, err := restoreData(ctx, controlplane.TenantStore{Prefix: live, Client: c, Fresh: fresh}, r, true); err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(ctx, fresh, clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, kv := range resp.Kvs {
			got[string(kv.Key)[len(fresh):]] = string(kv.Value)
		}
		if got[policy] != "policy of now" || got[binding] != "binding of now" {
			t.Errorf("snapshot %d: restored %s = %q, %s = %q; want today's", i, policy, got[policy], binding, got[binding])
		}
		for k, v := range snap {
			if k != policy && k != binding && got[k] != v {
				t.Errorf("snapshot %d: restored %s = %q, want the snapshot's %q", i, k, got[k], v)
			}
		}
		if _, ok := snap["validatingadmissionpolicies/tenants-own"]; !ok && got["validatingadmissionpolicies/tenants-own"] != "" {
			t.Errorf("snapshot %d: the tenant's own policy of now is kept: %q", i, got["validatingadmissionpolicies/tenants-own"])
		}
	}
}
