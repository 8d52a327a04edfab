package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/butlerdotdev/butler-apiserver/pkg/etcdtest"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
	"github.com/butlerdotdev/butler-apiserver/pkg/snapshot"
)

// An in-place restore replaces a tenant's data in one step. Cut short while writing, it leaves
// the data the control plane runs on as it was (the record and every object); run again, it
// writes the fresh prefix from its start, and the switch makes that the data and deletes the
// old. A second restore goes to the next generation; the tenant's removal deletes all of them.
// Another tenant's keys, beside the prefix, are never touched.
func TestRestoreSwitchesInOneStep(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Client(t)
	const root, neighbour = "/tenant-a/", "/tenant-a0/" // the key right after root's range
	for i := range 300 {
		if _, err := c.Put(ctx, fmt.Sprintf("%sconfigmaps/app/old-%03d", root, i), "old"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Put(ctx, neighbour+"configmaps/x", "other tenant"); err != nil {
		t.Fatal(err)
	}
	// The snapshot to restore: 1000 objects.
	var full bytes.Buffer
	w, err := snapshot.NewWriter(&full, snapshot.Header{Prefix: root})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := w.Write(snapshot.Record{Key: fmt.Sprintf("configmaps/app/new-%04d", i), Value: []byte("new")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	reader := func(data []byte) *snapshot.Reader {
		r, err := snapshot.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	pl := &plane{rec: tenantRecord{UID: "u", DataStore: "ds", DataStoreUser: "a", DataStorePrefix: root}, paths: tenantPaths{dir: t.TempDir()}}
	if err := writeRecord(pl.paths, pl.rec); err != nil {
		t.Fatal(err)
	}
	store := TenantStore{DataStore: "ds", Prefix: root, Client: c, Fresh: datastore.Generation(root, 1)}
	objects := func(prefix string) []string {
		t.Helper()
		resp, err := c.Get(ctx, prefix, clientv3.WithRange(datastore.ObjectsEnd(prefix)), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, kv := range resp.Kvs {
			keys = append(keys, string(kv.Key))
		}
		return keys
	}

	// Cut short: the stream ends half way, after some batches were written.
	st, err := snapshot.RestoreInto(ctx, c, store.Fresh, reader(full.Bytes()[:full.Len()/2]), snapshot.RestoreOptions{})
	if err == nil || st.Written == 0 {
		t.Fatalf("a restore cut short: %+v, %v", st, err)
	}
	if got := objects(root); len(got) != 300 || got[0] != root+"configmaps/app/old-000" {
		t.Fatalf("the data after a restore cut short: %d objects", len(got))
	}
	if rec, _ := readRecord(pl.paths.dir); rec.DataStorePrefix != root {
		t.Fatalf("the record after a restore cut short: %+v", rec)
	}

	// Again, whole, and the switch.
	if st, err := snapshot.RestoreInto(ctx, c, store.Fresh, reader(full.Bytes()), snapshot.RestoreOptions{}); err != nil || st.Written != 1000 {
		t.Fatalf("the restore again: %+v, %v", st, err)
	}
	if err := (&Controller{}).switchData(ctx, pl, store, store.Fresh); err != nil {
		t.Fatal(err)
	}
	if rec, _ := readRecord(pl.paths.dir); rec.DataStorePrefix != root+"~1/" || pl.rec.DataStorePrefix != root+"~1/" || etcdPrefix(rec.DataStorePrefix) != "/tenant-a/~1" {
		t.Fatalf("the record after the switch: %+v", rec)
	}
	if got := objects(root + "~1/"); len(got) != 1000 {
		t.Fatalf("the restored data: %d objects", len(got))
	}
	all, err := c.Get(ctx, root, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || all.Count != 1000 {
		t.Fatalf("keys under the tenant's prefix after the switch: %d (%v); the old ones are not deleted", all.Count, err)
	}

	// A second restore: the next generation, the first deleted.
	store = TenantStore{DataStore: "ds", Prefix: root + "~1/", Client: c, Fresh: datastore.Generation(root, 2)}
	if _, err := snapshot.RestoreInto(ctx, c, store.Fresh, reader(full.Bytes()), snapshot.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := (&Controller{}).switchData(ctx, pl, store, store.Fresh); err != nil {
		t.Fatal(err)
	}
	if all, _ := c.Get(ctx, root, clientv3.WithPrefix(), clientv3.WithCountOnly()); all.Count != 1000 || len(objects(root+"~2/")) != 1000 {
		t.Fatalf("after the second restore: %d keys under the tenant's prefix", all.Count)
	}
	if got := datastore.RootOf(pl.rec.DataStorePrefix); got != root {
		t.Fatalf("RootOf(%s) = %s", pl.rec.DataStorePrefix, got)
	}
	if n, err := datastore.RemoveTenant(ctx, c, datastore.Tenant{User: "a", Prefix: datastore.RootOf(pl.rec.DataStorePrefix)}); err != nil || n != 1000 {
		t.Fatalf("removing the tenant: %d keys, %v", n, err)
	}
	if resp, err := c.Get(ctx, neighbour, clientv3.WithPrefix()); err != nil || resp.Count != 1 {
		t.Fatalf("the other tenant's key: %v, %v", resp, err)
	}
}
