package steward

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/etcdtest"
)

// TestTrespassesNeedAuthentication: the check the Steward stage runs tells a datastore that
// enforces Steward's per-tenant users and prefix roles from one that does not. Set up as Steward
// does (a user and a role per tenant, the role granted /<schema>/), with authentication on
// tenant a may touch nothing of b's, nor the root, nor the history (Compact), nor the access
// control; with it off (the users and roles are there, but bind nothing), it may do all of it,
// and the check says so. The embedded etcd is this module's (v3.7): etcd before v3.6.9 (v3.5.28,
// v3.4.42) lets any authenticated user Compact, which the Steward stage's check catches on a
// DataStore run so (it did on the management plane's etcd v3.6.8).
func TestTrespassesNeedAuthentication(t *testing.T) {
	for _, auth := range []bool{true, false} {
		t.Run(map[bool]string{true: "authentication on", false: "authentication off"}[auth], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			u := etcdtest.Start(t, nil)
			root := connect(t, u.String(), "")
			a, b := Tenant{"/ns_a/", "ns_a", "ns_a"}, Tenant{"/ns_b/", "ns_b", "ns_b"}
			mustDo(t, func() error { _, err := root.UserAdd(ctx, "root", "rootpw"); return err })
			mustDo(t, func() error { _, err := root.UserGrantRole(ctx, "root", "root"); return err })
			for _, tn := range []Tenant{a, b} {
				mustDo(t, func() error { _, err := root.UserAdd(ctx, tn.User, "pw-"+tn.User); return err })
				mustDo(t, func() error { _, err := root.RoleAdd(ctx, tn.Role); return err })
				mustDo(t, func() error {
					_, err := root.RoleGrantPermission(ctx, tn.Role, tn.Prefix, clientv3.GetPrefixRangeEnd(tn.Prefix), clientv3.PermissionType(clientv3.PermReadWrite))
					return err
				})
				mustDo(t, func() error { _, err := root.UserGrantRole(ctx, tn.User, tn.Role); return err })
				mustDo(t, func() error { _, err := root.Put(ctx, tn.Prefix+"registry/namespaces/default", "x"); return err })
			}
			if auth {
				mustDo(t, func() error { _, err := root.AuthEnable(ctx); return err })
			}
			asA := connect(t, u.String(), "ns_a")
			trespasses, err := Trespasses(ctx, asA, a, b)
			if err != nil {
				t.Fatalf("a cannot read its own prefix: %v", err)
			}
			if auth && len(trespasses) > 0 {
				t.Errorf("with authentication on, a may:\n  %s", strings.Join(trespasses, "\n  "))
			}
			if !auth && len(trespasses) != 9 {
				t.Errorf("with authentication off, the check finds %d trespasses, want all 9: %v", len(trespasses), trespasses)
			}
		})
	}
}

// connect is a client of the plain-http etcd at url, as user (its password pw-<user>; root's
// rootpw) or, with user "", with no user.
func connect(t *testing.T, url, user string) *clientv3.Client {
	t.Helper()
	cfg := clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second}
	if user != "" {
		cfg.Username, cfg.Password = user, "pw-"+user
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func mustDo(t *testing.T, op func() error) {
	t.Helper()
	if err := op(); err != nil {
		t.Fatal(err)
	}
}

var (
	tenantControlPlanes = schema.GroupVersionResource{Group: "steward.butlerlabs.dev", Version: "v1alpha1", Resource: "tenantcontrolplanes"}
	dataStores          = schema.GroupVersionResource{Group: "steward.butlerlabs.dev", Version: "v1alpha1", Resource: "datastores"}
)

// TestStewardDataStoreIsolation (the Steward stage, STEWARD_ISOLATION="<ns>/<a> <ns>/<b>", two
// TenantControlPlanes of the real Steward on one DataStore, KUBECONFIG the management cluster):
// with the etcd client certificate Steward gives a's kube-apiserver, a reads its own prefix and
// is refused b's prefix, the root, Compact (every tenant's history) and the datastore's access
// control.
func TestStewardDataStoreIsolation(t *testing.T) {
	pair := strings.Fields(os.Getenv("STEWARD_ISOLATION"))
	if len(pair) != 2 {
		t.Skip("STEWARD_ISOLATION (\"<ns>/<a> <ns>/<b>\") is set by the Steward stage of hack/test-cluster.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	dyn, kube := dynamic.NewForConfigOrDie(cfg), kubernetes.NewForConfigOrDie(cfg)
	a, aStore, aSecret := stewardTenant(ctx, t, dyn, pair[0])
	b, bStore, _ := stewardTenant(ctx, t, dyn, pair[1])
	if aStore != bStore {
		t.Fatalf("the tenants are on DataStores %s and %s, want one", aStore, bStore)
	}
	ds, err := dyn.Resource(dataStores).Get(ctx, aStore, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	endpoints, _, _ := unstructured.NestedStringSlice(ds.Object, "spec", "endpoints")
	if len(endpoints) == 0 {
		t.Fatalf("DataStore %s has no endpoints", aStore)
	}
	// The Secret Steward mounts into a's kube-apiserver for its --etcd-* flags.
	ns := strings.Split(pair[0], "/")[0]
	secret, err := kube.CoreV1().Secrets(ns).Get(ctx, aSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(secret.Data["server.crt"], secret.Data["server.key"])
	if err != nil {
		t.Fatalf("Secret %s/%s: %v", ns, aSecret, err)
	}
	if leaf, _ := x509.ParseCertificate(cert.Certificate[0]); leaf.Subject.CommonName != a.User {
		t.Errorf("a's etcd client certificate is for %q, want its own user %q", leaf.Subject.CommonName, a.User)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(secret.Data["ca.crt"])
	asA, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + endpoints[0]}, DialTimeout: 5 * time.Second,
		TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}})
	if err != nil {
		t.Fatal(err)
	}
	defer asA.Close()
	trespasses, err := Trespasses(ctx, asA, a, b)
	if err != nil {
		t.Fatalf("a's own credentials: %v", err)
	}
	if len(trespasses) > 0 {
		t.Fatalf("with the etcd credentials Steward gives %s's kube-apiserver, it may:\n  %s", pair[0], strings.Join(trespasses, "\n  "))
	}
	t.Logf("%s (user %s) read its own prefix %s and was refused %s's prefix %s, the root, Compact and the access control of DataStore %s",
		pair[0], a.User, a.Prefix, pair[1], b.Prefix, aStore)
}

// stewardTenant reads what Steward's status says of the TenantControlPlane ns/name's storage.
func stewardTenant(ctx context.Context, t *testing.T, dyn dynamic.Interface, nsName string) (tn Tenant, dataStore, certSecret string) {
	t.Helper()
	ns, name, _ := strings.Cut(nsName, "/")
	tcp, err := dyn.Resource(tenantControlPlanes).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path ...string) string {
		v, _, _ := unstructured.NestedString(tcp.Object, append([]string{"status", "storage"}, path...)...)
		if v == "" {
			t.Fatalf("TenantControlPlane %s has no status.storage.%s", nsName, strings.Join(path, "."))
		}
		return v
	}
	schemaName := get("setup", "schema")
	// Steward's role is named after the schema (steward/internal/datastore/etcd.go GrantPrivileges).
	return Tenant{Prefix: "/" + schemaName + "/", User: get("setup", "user"), Role: schemaName}, get("dataStoreName"), get("certificate", "secretName")
}
