package snapshots

import (
	"bytes"
	"context"
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
// snapshot. A clone has neither: its own Machines register their Nodes.
func TestInPlaceRestoreKeepsTheMachinesNodes(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Client(t)
	const live = "/t/"
	now := map[string]string{
		"minions/b":                    "node b",
		"leases/kube-node-lease/b":     "lease b",
		"configmaps/app/deleted-since": "gone after the restore",
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
	for _, k := range []string{"configmaps/app/cm", "leases/kube-node-lease/a", "leases/kube-system/kube-scheduler", "minions/a", "pods/app/p"} {
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
		if inPlace && (st.Dropped != 0 || st.Written != 5) {
			t.Errorf("in place: %+v, want 5 written (3 of the snapshot, 2 of now), none dropped", st)
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
		"configmaps/app/cm":                 "snapshot configmaps/app/cm",
		"leases/kube-system/kube-scheduler": "snapshot leases/kube-system/kube-scheduler",
		"pods/app/p":                        "snapshot pods/app/p",
		"minions/b":                         "node b",
		"leases/kube-node-lease/b":          "lease b",
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
		if isMachineNode(k) {
			t.Errorf("a new cluster has %s", k)
		}
	}
	if got["pods/app/p"] == "" {
		t.Errorf("a new cluster lacks the snapshot's pod: %v", got)
	}
}
