package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/butlerdotdev/butler-apiserver/pkg/etcdtest"
)

// A snapshot taken under a write load holds exactly the tenant's keys as of its revision (every
// write up to it, none after, no other tenant's key), reads back the same, and restores into
// another prefix with the keys rewritten, leased keys on a new lease, and what Keep drops left out.
func TestTakeUnderLoadAndRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := etcdtest.Client(t)
	for i := range 1500 {
		if _, err := c.Put(ctx, fmt.Sprintf("/a/registry/configmaps/ns/cm-%04d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Put(ctx, "/b/registry/secrets/ns/other", "not a's"); err != nil {
		t.Fatal(err)
	}
	lease, err := c.Grant(ctx, 600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "/a/registry/events/ns/e1", "event", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}

	// A bounded write load: new keys and overwrites in the tenant's prefix while the snapshot reads.
	var stop atomic.Bool
	var written atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load() && i < 20000; i++ {
			key := fmt.Sprintf("/a/registry/configmaps/ns/load-%05d", i)
			if i%2 == 1 {
				key = fmt.Sprintf("/a/registry/configmaps/ns/cm-%04d", i%1500)
			}
			if _, err := c.Put(ctx, key, fmt.Sprintf("w%d", i)); err == nil {
				written.Add(1)
			}
		}
	}()
	for written.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	var buf bytes.Buffer
	stats, err := Take(ctx, c, "/a/", Header{KubernetesVersion: "v1.36.3"}, 100, &buf)
	for before := written.Load(); written.Load() < before+100; {
		time.Sleep(time.Millisecond) // writes after the snapshot, which it must not hold
	}
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}

	want, err := c.Get(ctx, "/a/", clientv3.WithPrefix(), clientv3.WithRev(stats.Revision))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Objects != int64(len(want.Kvs)) || stats.Bytes != int64(buf.Len()) {
		t.Fatalf("stats %+v; at revision %d the prefix has %d keys, the stream %d bytes", stats, stats.Revision, len(want.Kvs), buf.Len())
	}
	if _, err := Verify(bytes.NewReader(buf.Bytes()), stats.Checksum); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Revision != stats.Revision || r.Header.Prefix != "/a/" || r.Header.KubernetesVersion != "v1.36.3" {
		t.Fatalf("header %+v", r.Header)
	}
	for i := 0; ; i++ {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			if i != len(want.Kvs) {
				t.Fatalf("%d records, want %d", i, len(want.Kvs))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kv := want.Kvs[i]
		if "/a/"+rec.Key != string(kv.Key) || !bytes.Equal(rec.Value, kv.Value) || rec.Leased != (kv.Lease != 0) {
			t.Fatalf("record %d: %q=%q leased %v, want %q=%q", i, rec.Key, rec.Value, rec.Leased, kv.Key, kv.Value)
		}
		if kv.ModRevision > stats.Revision {
			t.Fatalf("a write after the revision: %s at %d", kv.Key, kv.ModRevision)
		}
	}
	now, _ := c.Get(ctx, "/a/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if now.Header.Revision <= stats.Revision || now.Count <= stats.Objects {
		t.Fatalf("no write after the snapshot (revision %d, now %d; %d keys)", stats.Revision, now.Header.Revision, now.Count)
	}
	t.Logf("snapshot at revision %d: %d keys, %d bytes; %d keys in the prefix after the load", stats.Revision, stats.Objects, stats.Bytes, now.Count)

	r, _ = NewReader(bytes.NewReader(buf.Bytes()))
	if _, err := c.Put(ctx, "/c/stale", "left from an earlier attempt"); err != nil {
		t.Fatal(err)
	}
	rs, err := RestoreInto(ctx, c, "/c/", r, RestoreOptions{Keep: func(rec Record) bool { return rec.Key != "registry/configmaps/ns/cm-0000" }, BatchOps: 37})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Written != stats.Objects-1 || rs.Dropped != 1 {
		t.Fatalf("restore %+v", rs)
	}
	got, _ := c.Get(ctx, "/c/", clientv3.WithPrefix())
	if int64(len(got.Kvs)) != rs.Written {
		t.Fatalf("%d keys under /c/, want %d", len(got.Kvs), rs.Written)
	}
	for i, kv := range got.Kvs {
		src := want.Kvs[i+1] // cm-0000 dropped, the rest in order
		if string(kv.Key) != "/c/"+string(src.Key[3:]) || !bytes.Equal(kv.Value, src.Value) {
			t.Fatalf("restored %q=%q, want %q", kv.Key, kv.Value, src.Key)
		}
		if (kv.Lease != 0) != (src.Lease != 0) || (kv.Lease != 0 && kv.Lease == src.Lease) {
			t.Fatalf("%s: lease %d (source %d): a leased key gets a new lease, others none", kv.Key, kv.Lease, src.Lease)
		}
	}
}

// Stored data that changed is refused by its checksum; a truncated stream does not read as whole.
func TestCorruptionIsDetected(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Prefix: "/a/", Revision: 9})
	for i := range 100 {
		_ = w.Write(Record{Key: fmt.Sprintf("k%d", i), Value: bytes.Repeat([]byte{byte(i)}, 100)})
	}
	stats, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	bad := append([]byte(nil), data...)
	bad[len(bad)/2] ^= 0xff
	var mismatch *ChecksumMismatchError
	if _, err := Verify(bytes.NewReader(bad), stats.Checksum); !errors.As(err, &mismatch) {
		t.Fatalf("a flipped byte: %v", err)
	}
	r, err := NewReader(bytes.NewReader(data[:len(data)-20]))
	if err == nil {
		for err == nil {
			_, err = r.Next()
		}
		if errors.Is(err, io.EOF) {
			t.Fatal("a truncated stream read to its end")
		}
	}
}

func TestDirStore(t *testing.T) {
	d := Dir{Root: t.TempDir()}
	testStore(t, d, func(name string) string { return filepath.Join(d.Root, name+".snap") })
	aborted, _ := d.Create(context.Background(), "team-a/x")
	aborted.Abort()
	if entries, _ := os.ReadDir(filepath.Join(d.Root, "team-a")); len(entries) != 0 {
		t.Fatalf("files left: %v", entries)
	}
}

// The S3 store against a fake S3 server (the e2e test runs it against a real one).
func TestS3Store(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("snapshots"); err != nil {
		t.Fatal(err)
	}
	// Over https: on http minio-go signs each uploaded part in chunks, which the fake does not
	// decode (a real server does).
	srv := httptest.NewTLSServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	st, err := NewS3(S3Config{Endpoint: srv.URL, Bucket: "snapshots", Prefix: "butler/", AccessKeyID: "id", SecretAccessKey: "secret",
		Transport: srv.Client().Transport})
	if err != nil {
		t.Fatal(err)
	}
	testStore(t, st, func(name string) string { return "s3://snapshots/butler/" + name + ".snap" })

	// A stream of several parts, aborted half way, leaves nothing; committed, it reads back whole.
	big := bytes.Repeat([]byte("0123456789abcdef"), (s3PartSize*2+12345)/16)
	aborted, err := st.Create(context.Background(), "team-a/big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aborted.Write(big[:s3PartSize+1]); err != nil {
		t.Fatal(err)
	}
	aborted.Abort()
	if _, err := st.Open(context.Background(), "team-a/big"); err == nil {
		t.Fatal("an aborted upload is visible")
	}
	p, err := st.Create(context.Background(), "team-a/big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(big); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	r, err := st.Open(context.Background(), "team-a/big")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read back %d of %d bytes: %v", len(got), len(big), err)
	}
	if _, err := NewS3(S3Config{Endpoint: "s3.example.com", Bucket: "b"}); err == nil {
		t.Error("an endpoint without a scheme accepted")
	}
}

// testStore checks what every Store does: nothing visible before Commit, the data read back
// after, the location, refused names, and a delete that may be repeated.
func testStore(t *testing.T, st Store, location func(name string) string) {
	t.Helper()
	ctx := context.Background()
	const name = "team-a/prod-1-uid"
	p, err := st.Create(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = p.Write([]byte("data"))
	if _, err := st.Open(ctx, name); err == nil {
		t.Fatal("visible before commit")
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	f, err := st.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "data" || st.Location(name) != location(name) {
		t.Fatalf("%q at %s", b, st.Location(name))
	}
	for _, bad := range []string{"../x", "/abs", "a/../../b", ""} {
		if _, err := st.Create(ctx, bad); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	if err := st.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Open(ctx, name); err == nil {
		t.Fatal("readable after delete")
	}
	if err := st.Delete(ctx, name); err != nil {
		t.Fatalf("deleting again: %v", err)
	}
}
