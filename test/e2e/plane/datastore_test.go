package plane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// datastoreTenant is what the test knows of one local tenant: its control plane's UID, state
// directory and kube-apiserver's command line.
type datastoreTenant struct {
	name, uid, dir string
	tcpNamespace   string // its TenantControlPlane's namespace (the TenantCluster's tenant namespace)
	pids           map[string]int
	args           map[string]string // kube-apiserver's flags
}

// TestLocalTenantDataStoreIsolation: two local TenantClusters keep their data in the local
// provider's datastore (an etcd with TLS and client-certificate auth, published as the Steward
// DataStore "local"), never in the management etcd. Tenant A's own credentials, taken from its
// kube-apiserver's command line, read A's keys and are denied B's prefix, the management
// cluster's /registry, the whole keyspace and Compact; plain HTTP to the datastore gets no data;
// nothing A's processes name or A's state directory holds is B's or the datastore's CA key.
// Deleting A removes its keys, its etcd user and its role, and leaves B's.
func TestLocalTenantDataStoreIsolation(t *testing.T) {
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-datastore")
	tenants := map[string]*datastoreTenant{"a": {name: "iso-a"}, "b": {name: "iso-b"}}
	for _, tn := range tenants {
		localCluster(t, ns, tn.name, framework.PinnedVersion, bootstrap.OSTalos, 0)
	}
	d := framework.DynamicClient(t)
	for _, tn := range tenants {
		tc := framework.WaitCluster(t, ns, tn.name, 3*time.Minute, "control plane ready on a datastore", func(tc *v1alpha1.TenantCluster) bool {
			return meta.IsStatusConditionTrue(tc.Status.Conditions, "ControlPlaneReady") && tc.Status.DataStoreName != ""
		})
		if tc.Status.DataStoreName != "local" {
			t.Errorf("%s: status.dataStoreName %q, want the provider's datastore local", tn.name, tc.Status.DataStoreName)
		}
		// The status says when the tenant's certificates expire.
		expiry := map[string]time.Time{}
		if tc.Status.Credentials != nil {
			for _, e := range tc.Status.Credentials.Expiry {
				expiry[e.Name] = e.NotAfter.Time
			}
		}
		for _, name := range []string{"ca", "admin-kubeconfig"} {
			if !expiry[name].After(time.Now()) {
				t.Errorf("%s: status.credentials.expiry[%s] = %v, want a time to come", tn.name, name, expiry[name])
			}
		}
		tcp, err := d.Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(ctx, tn.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tn.uid = string(tcp.GetUID())
		tn.tcpNamespace = tcp.GetNamespace()
		tn.dir = filepath.Join(framework.Plane.Dir, "tenants", tn.uid)
		tn.pids = framework.TenantPids(t, tn.dir)
		tn.args = framework.ProcessFlags(t, tn.pids["kube-apiserver"])
	}
	a, b := tenants["a"], tenants["b"]

	// The DataStore and how A's kube-apiserver reaches it.
	ds, err := d.Resource(datastore.GVR).Get(ctx, "local", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := datastore.Parse(ds)
	if err != nil {
		t.Fatal(err)
	}
	endpoint := spec.Endpoints[0]
	for flag, want := range map[string]string{
		"etcd-servers": "https://" + endpoint, "etcd-prefix": "/" + a.uid, "etcd-compaction-interval": "0",
	} {
		if got := a.args[flag]; got != want {
			t.Errorf("A's kube-apiserver --%s=%q, want %q", flag, got, want)
		}
	}

	// A's own credentials.
	cert, err := tls.LoadX509KeyPair(a.args["etcd-certfile"], a.args["etcd-keyfile"])
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(a.args["etcd-cafile"])
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	// Kamaji's default user for a TenantControlPlane (spec.dataStoreUsername unset) is
	// <its namespace>_<its name>; the TenantControlPlane lives in the tenant namespace.
	if want := a.tcpNamespace + "_" + a.name; leaf.Subject.CommonName != want {
		t.Errorf("A's etcd client certificate is for %q, want its own user %q", leaf.Subject.CommonName, want)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	asA, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + endpoint}, DialTimeout: 5 * time.Second,
		TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}})
	if err != nil {
		t.Fatal(err)
	}
	defer asA.Close()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if resp, err := asA.Get(octx, "/"+a.uid+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count == 0 {
		t.Errorf("A reads its own keys: %v keys, %v", resp, err)
	}
	for what, op := range map[string]func() error{
		"read B's prefix":            func() error { _, err := asA.Get(octx, "/"+b.uid+"/", clientv3.WithPrefix()); return err },
		"write into B's prefix":      func() error { _, err := asA.Put(octx, "/"+b.uid+"/registry/x", "a"); return err },
		"read /registry":             func() error { _, err := asA.Get(octx, "/registry/", clientv3.WithPrefix()); return err },
		"read the whole keyspace":    func() error { _, err := asA.Get(octx, "", clientv3.WithFromKey()); return err },
		"compact everyone's history": func() error { _, err := asA.Compact(octx, 1); return err },
	} {
		if err := op(); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("A may %s: %v, want permission denied", what, err)
		}
	}
	root := framework.TenantEtcd(t, a.pids["kube-apiserver"])
	if n := framework.EtcdKeys(t, root, "/registry/"); n != 0 {
		t.Errorf("the datastore holds %d keys under /registry/: the management cluster's data must not be there", n)
	}

	// Plain HTTP, and a client with no certificate, get nothing.
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Post("http://"+endpoint+"/v3/kv/range", "application/json",
		strings.NewReader(`{"key":"AA==","range_end":"AA=="}`)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP to the datastore answered 200")
		}
	}
	anon, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + endpoint}, DialTimeout: 3 * time.Second,
		TLS: &tls.Config{RootCAs: pool}})
	if err == nil {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		if _, err := anon.Get(actx, "/"+a.uid+"/", clientv3.WithPrefix()); err == nil {
			t.Error("a client without a certificate read the datastore")
		}
		acancel()
		anon.Close()
	}

	// A's processes name only A's files, and none of A's files is B's or the datastore CA's key.
	for component, pid := range a.pids {
		for flag, v := range framework.ProcessFlags(t, pid) {
			if strings.Contains(v, b.uid) {
				t.Errorf("A's %s --%s names B: %s", component, flag, v)
			}
			if strings.HasPrefix(v, "/") && strings.Contains(v, "/tenants/") && !strings.HasPrefix(v, a.dir+"/") {
				t.Errorf("A's %s --%s names a file outside A's directory: %s", component, flag, v)
			}
		}
	}
	caKey := readSecretKey(t, spec.CAKey)
	var secretsOfB [][]byte
	// Unreadable files and directories are skipped (the walks return no error): a file the test
	// cannot read is one it cannot find a secret in, in A or in B.
	_ = filepath.WalkDir(b.dir, func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && (strings.HasSuffix(path, ".key") || strings.HasSuffix(path, ".conf")) {
			if data, err := os.ReadFile(path); err == nil {
				secretsOfB = append(secretsOfB, data)
			}
		}
		return nil
	})
	_ = filepath.WalkDir(a.dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		if bytes.Contains(data, bytes.TrimSpace(caKey)) {
			t.Errorf("A's %s holds the datastore CA's key", path)
		}
		for _, s := range secretsOfB {
			if len(s) > 0 && bytes.Contains(data, bytes.TrimSpace(s)) {
				t.Errorf("A's %s holds one of B's keys", path)
			}
		}
		return nil
	})

	// Deleting A removes its keys, user and role; B keeps its own.
	userA := leaf.Subject.CommonName
	framework.DeleteCluster(t, ns, a.name, a.uid)
	if n := framework.EtcdKeys(t, root, "/"+a.uid+"/"); n != 0 {
		t.Errorf("%d keys left under A's prefix", n)
	}
	if _, err := root.Auth.UserGet(octx, userA); !errors.Is(err, rpctypes.ErrUserNotFound) {
		t.Errorf("A's etcd user after its deletion: %v", err)
	}
	if _, err := root.Auth.RoleGet(octx, userA); !errors.Is(err, rpctypes.ErrRoleNotFound) {
		t.Errorf("A's etcd role after its deletion: %v", err)
	}
	if n := framework.EtcdKeys(t, root, "/"+b.uid+"/"); n == 0 {
		t.Errorf("B's keys are gone with A")
	}
	framework.DeleteCluster(t, ns, b.name, b.uid)
}

// readSecretKey reads what a DataStore's Ref points at.
func readSecretKey(t *testing.T, r datastore.Ref) []byte {
	t.Helper()
	if r.Content != nil {
		return r.Content
	}
	s, err := framework.Plane.Kube.CoreV1().Secrets(r.SecretNamespace).Get(context.Background(), r.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Data[r.SecretKey]
}
