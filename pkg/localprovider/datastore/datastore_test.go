package datastore

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/etcdtest"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// startEtcd runs an etcd with TLS and client-certificate auth, as the local provider runs its
// datastores, and returns the credentials a DataStore for it names.
func startEtcd(t *testing.T) *Credentials {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.NewCA("datastore-ca")
	if err != nil {
		t.Fatal(err)
	}
	_, err = pki.EnsureLeaf(dir, "server", ca, pki.Request{CommonName: "etcd", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: pki.ServerAuth})
	if err != nil {
		t.Fatal(err)
	}
	root, err := pki.EnsureLeaf(dir, "root", ca, pki.Request{CommonName: RootUser, Usage: pki.ClientAuth})
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteFile(filepath.Join(dir, "ca.crt"), ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	client := etcdtest.Start(t, &transport.TLSInfo{CertFile: pki.CertPath(dir, "server"), KeyFile: pki.KeyPath(dir, "server"),
		TrustedCAFile: filepath.Join(dir, "ca.crt")})
	return &Credentials{Spec: Spec{Name: "test", Driver: DriverEtcd, Endpoints: []string{client.Host}}, CA: ca, Root: root}
}

func connect(t *testing.T, creds *Credentials, kp *pki.KeyPair) *clientv3.Client {
	t.Helper()
	c, err := creds.Connect(kp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Two tenants on one datastore: each reads and writes its own prefix and is denied the other's,
// the root of the keyspace and compaction; plain HTTP gets nothing; removing a tenant removes
// its keys, user and role, and its certificate then authenticates nobody.
func TestTenantsAreConfinedToTheirPrefix(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	creds := startEtcd(t)
	root := connect(t, creds, creds.Root)
	if err := EnableAuth(ctx, root); err != nil {
		t.Fatal(err)
	}
	if err := EnableAuth(ctx, root); err != nil {
		t.Fatalf("a second EnableAuth: %v", err)
	}
	a, b := NewTenant("team-a_prod", "uid-a"), NewTenant("team-b_prod", "uid-b")
	dir := t.TempDir()
	clients := map[string]*clientv3.Client{}
	for _, tn := range []Tenant{a, b} {
		for range 2 { // idempotent
			if err := EnsureTenant(ctx, root, tn); err != nil {
				t.Fatal(err)
			}
		}
		kp, err := creds.ClientCertificate(dir, tn.User, tn)
		if err != nil {
			t.Fatal(err)
		}
		if kp.Cert.Subject.CommonName != tn.User {
			t.Fatalf("certificate CN %q, want %q", kp.Cert.Subject.CommonName, tn.User)
		}
		clients[tn.User] = connect(t, creds, kp)
	}
	ca := clients[a.User]
	if _, err := ca.Put(ctx, a.Prefix+"registry/pods/x", "a"); err != nil {
		t.Fatalf("A writes its own prefix: %v", err)
	}
	if _, err := clients[b.User].Put(ctx, b.Prefix+"registry/pods/y", "b"); err != nil {
		t.Fatalf("B writes its own prefix: %v", err)
	}
	if resp, err := ca.Get(ctx, a.Prefix, clientv3.WithPrefix()); err != nil || resp.Count != 1 {
		t.Fatalf("A reads its own prefix: %v, %v", resp, err)
	}
	// kube-apiserver asks for the server's version as the tenant, to learn whether watch
	// progress requests are supported (etcd v3.6 wanted root for it).
	if _, err := ca.Status(ctx, ca.Endpoints()[0]); err != nil {
		t.Errorf("A's Status: %v", err)
	}
	for what, op := range map[string]func() error{
		"read B's prefix":  func() error { _, err := ca.Get(ctx, b.Prefix, clientv3.WithPrefix()); return err },
		"write B's prefix": func() error { _, err := ca.Put(ctx, b.Prefix+"registry/x", "a"); return err },
		"read /registry":   func() error { _, err := ca.Get(ctx, "/registry", clientv3.WithPrefix()); return err },
		"read everything":  func() error { _, err := ca.Get(ctx, "", clientv3.WithFromKey()); return err },
		"compact":          func() error { _, err := ca.Compact(ctx, 1); return err },
		"add a user":       func() error { _, err := ca.Auth.UserAdd(ctx, "x", "y"); return err },
	} {
		if err := op(); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("A may %s: %v, want permission denied", what, err)
		}
	}

	// Plain HTTP to the TLS port answers no data.
	resp, err := http.Post("http://"+creds.Spec.Endpoints[0]+"/v3/kv/range", "application/json", nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP to the datastore answered 200")
		}
	}

	// The owner compacts.
	comp := &Compactor{Client: root}
	if rev, err := comp.Pass(ctx); err != nil || rev != 0 {
		t.Fatalf("first pass: %d, %v", rev, err)
	}
	if _, err := root.Put(ctx, b.Prefix+"z", "1"); err != nil {
		t.Fatal(err)
	}
	// A snapshot streaming holds compaction off: the pass waits for it instead of skipping its
	// turn (a tenant snapshotting every interval would otherwise keep the whole datastore from
	// compacting), and a snapshot asked for while the pass waits waits for the pass.
	release := comp.Hold()
	type result struct {
		rev int64
		err error
	}
	passed := make(chan result, 1)
	go func() {
		rev, err := comp.Pass(ctx)
		passed <- result{rev, err}
	}()
	select {
	case r := <-passed:
		t.Fatalf("a pass while a snapshot streams did not wait for it: compacted to %d, %v", r.rev, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	held := make(chan func(), 1)
	go func() { held <- comp.Hold() }()
	select {
	case <-held:
		t.Fatal("a snapshot started while a pass waited: back-to-back snapshots would put compaction off forever")
	case <-time.After(300 * time.Millisecond):
	}
	release()
	release() // twice is once
	if r := <-passed; r.err != nil || r.rev == 0 {
		t.Fatalf("the pass after the snapshot compacted to %d: %v", r.rev, r.err)
	}
	(<-held)()
	// A pass that waits gives up with its context.
	release = comp.Hold()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	if _, err := comp.Pass(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a pass past its deadline: %v", err)
	}
	cancel()
	release()

	deleted, err := RemoveTenant(ctx, root, a)
	if err != nil || deleted != 1 {
		t.Fatalf("RemoveTenant: %d keys, %v", deleted, err)
	}
	if _, err := RemoveTenant(ctx, root, a); err != nil {
		t.Fatalf("RemoveTenant again: %v", err)
	}
	if _, err := root.Auth.UserGet(ctx, a.User); !errors.Is(err, rpctypes.ErrUserNotFound) {
		t.Errorf("user %s after removal: %v", a.User, err)
	}
	if _, err := root.Auth.RoleGet(ctx, a.User); !errors.Is(err, rpctypes.ErrRoleNotFound) {
		t.Errorf("role %s after removal: %v", a.User, err)
	}
	if _, err := ca.Get(ctx, a.Prefix, clientv3.WithPrefix()); err == nil {
		t.Error("A's certificate still reads after its user is gone")
	}
	if resp, err := clients[b.User].Get(ctx, b.Prefix, clientv3.WithPrefix()); err != nil || resp.Count != 2 {
		t.Errorf("B after A's removal: %v, %v", resp, err)
	}
}

func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []Candidate
		want string
		err  bool
	}{
		{"none", nil, "", true},
		{"fewest tenants", []Candidate{{"a", 3, 0}, {"b", 1, 0}, {"c", 2, 0}}, "b", false},
		{"tie by name", []Candidate{{"b", 1, 0}, {"a", 1, 0}}, "a", false},
		{"full skipped", []Candidate{{"a", 2, 2}, {"b", 5, 10}}, "b", false},
		{"all full", []Candidate{{"a", 2, 2}, {"b", 1, 1}}, "", true},
	} {
		got, err := Place(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: %q, %v; want %q (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// A published DataStore parses back to its endpoints and Secret references; a DataStore of
// another driver, without endpoints or with a bad limit is refused.
func TestObjectParses(t *testing.T) {
	u := Object("local", []string{"127.0.0.1:2379"}, "kube-system", "datastore-local")
	u.SetAnnotations(map[string]string{MaxTenantsAnnotation: "7"})
	s, err := Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	if s.Endpoints[0] != "127.0.0.1:2379" || s.CAKey.SecretName != "datastore-local" || s.ClientKey.SecretKey != SecretClientKey || s.MaxTenants != 7 {
		t.Errorf("parsed %+v", s)
	}
	for name, mutate := range map[string]func(*unstructured.Unstructured){
		"driver": func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "MySQL", "spec", "driver")
		},
		"endpoints": func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "endpoints") },
		"client": func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "tlsConfig", "clientCertificate")
		},
		"limit": func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{MaxTenantsAnnotation: "many"}) },
	} {
		bad := Object("local", []string{"127.0.0.1:2379"}, "kube-system", "datastore-local")
		mutate(bad)
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}
