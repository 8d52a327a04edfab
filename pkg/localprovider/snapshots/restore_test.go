package snapshots

import (
	"bytes"
	"context"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/butlerdotdev/butler-apiserver/pkg/etcdtest"
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
// snapshot, gets no binding), and a clone binds none of the source's Team.
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
	for _, k := range []string{"namespaces/app", "configmaps/app/cm", "leases/kube-node-lease/a", "leases/kube-system/kube-scheduler", "minions/a", "pods/app/p",
		"clusterrolebindings/butler:team-admins", "clusterrolebindings/cluster-admin", "rolebindings/app/butler:team-operators",
		"rolebindings/app/deploy-bot"} {
		if err := w.Write(snapshot.Record{Key: k, Value: []byte("snapshot " + k)}); err != nil {
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
		if inPlace && (st.Dropped != 0 || st.Written != 10) {
			t.Errorf("in place: %+v, want 10 written (6 of the snapshot, 4 of now), none dropped", st)
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
		"namespaces/app":                         "snapshot namespaces/app",
		"configmaps/app/cm":                      "snapshot configmaps/app/cm",
		"leases/kube-system/kube-scheduler":      "snapshot leases/kube-system/kube-scheduler",
		"pods/app/p":                             "snapshot pods/app/p",
		"minions/b":                              "node b",
		"leases/kube-node-lease/b":               "lease b",
		"clusterrolebindings/cluster-admin":      "snapshot clusterrolebindings/cluster-admin",
		"rolebindings/app/deploy-bot":            "snapshot rolebindings/app/deploy-bot",
		"clusterrolebindings/butler:team-admins": "alice",
		"rolebindings/app/butler:team-operators": "operators of now",
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
	if got["pods/app/p"] == "" || got["rolebindings/app/deploy-bot"] == "" {
		t.Errorf("a new cluster lacks the snapshot's pod: %v", got)
	}
}
