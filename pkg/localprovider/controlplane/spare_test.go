package controlplane

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
)

// defaultTCP is the TenantControlPlane the local StewardControlPlane makes of a TenantCluster
// that sets nothing: its Cluster's defaulted networks, butler's admission configuration flag
// (which the provider replaces by its own file), and the CRD's default admission controllers.
func defaultTCP() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tenantControlPlaneAPIVersion, "kind": tenantControlPlaneKind,
		"metadata": map[string]any{"name": "c1", "namespace": "c1-abcd1234"},
		"spec": map[string]any{
			"kubernetes": map[string]any{"version": "v1.36.3", "kubelet": map[string]any{"cgroupfs": "systemd"},
				"admissionControllers": toAnySlice(defaultAdmissionControllers)},
			"networkProfile": map[string]any{"serviceCidr": v1alpha1.DefaultServiceCIDR, "podCidr": v1alpha1.DefaultPodCIDR,
				"clusterDomain": "cluster.local"},
			"controlPlane": map[string]any{"deployment": map[string]any{"extraArgs": map[string]any{
				"apiServer": []any{"--admission-control-config-file=/etc/kubernetes/butler/admission.yaml"}}}},
		},
	}}
	u.SetUID(types.UID("0f6c2a4e-uid"))
	return u
}

// Only a new tenant whose kube-apiserver would be started exactly as the spares' was may take
// one: anything in its spec that reaches kube-apiserver's command line or its serving
// certificate, a status already written, a restore, a wake-on-request listener, a stopped start
// or datastore names of its own start it cold. What reaches only the controllers (the pod CIDR,
// their arguments) or the join setup (DNS, cgroup driver) does not matter: they start with the
// tenant.
func TestSpareMismatch(t *testing.T) {
	c := &Controller{opts: Options{PinnedVersion: "v1.36.3"}}
	set := func(v any, path ...string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, v, path...) }
	}
	annotate := func(k, v string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{k: v}) }
	}
	for _, tc := range []struct {
		name   string
		change func(*unstructured.Unstructured)
		takes  bool
	}{
		{"the default shape", func(*unstructured.Unstructured) {}, true},
		{"the provider's own defaults unset", func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "networkProfile", "clusterDomain")
		}, true},
		{"version without its v", set("1.36.3", "spec", "kubernetes", "version"), true},
		{"another pod CIDR (the controller manager's)", set("10.200.0.0/16", "spec", "networkProfile", "podCidr"), true},
		{"controller manager arguments", set([]any{"--v=4"}, "spec", "controlPlane", "deployment", "extraArgs", "controllerManager"), true},
		{"DNS service IPs (the join setup's)", set([]any{"10.96.0.53"}, "spec", "networkProfile", "dnsServiceIPs"), true},
		{"replicas 1 said", set(int64(1), "spec", "controlPlane", "deployment", "replicas"), true},
		{"the datastore it was placed on, named", set("local", "spec", "dataStore"), true},
		{"another version", set("v1.35.0", "spec", "kubernetes", "version"), false},
		{"another service CIDR", set("10.100.0.0/16", "spec", "networkProfile", "serviceCidr"), false},
		{"the provider's default service CIDR", func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "networkProfile", "serviceCidr")
		}, false},
		{"another cluster domain", set("tenant.example", "spec", "networkProfile", "clusterDomain"), false},
		{"certificate SANs", set([]any{"api.example.com"}, "spec", "networkProfile", "certSANs"), false},
		{"a service address", set("10.0.0.9", "spec", "networkProfile", "address"), false},
		{"kube-apiserver arguments", set([]any{"--v=4"}, "spec", "controlPlane", "deployment", "extraArgs", "apiServer"), false},
		{"other admission plugins", set([]any{"AlwaysPullImages"}, "spec", "kubernetes", "admissionControllers"), false},
		{"no admission plugins", func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "kubernetes", "admissionControllers")
		}, false},
		{"stopped", set(int64(0), "spec", "controlPlane", "deployment", "replicas"), false},
		{"its own schema", set("mine", "spec", "dataStoreSchema"), false},
		{"its own etcd user", set("me", "spec", "dataStoreUsername"), false},
		{"restored from a snapshot", annotate(v1alpha1.RestoreFromAnnotation, "snap-1"), false},
		{"wake on request", annotate(hibernation.WakeOnRequestAnnotation, "true"), false},
		{"a published endpoint", set("127.0.0.1:30001", "status", "controlPlaneEndpoint"), false},
		{"a datastore in its status", set("local", "status", "storage", "dataStoreName"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tcp := defaultTCP()
			tc.change(tcp)
			spec, err := parseTenantSpec(tcp)
			if err != nil {
				t.Fatal(err)
			}
			why := spareMismatch(tcp, spec, c.spareShape(""))
			if (why == "") != tc.takes {
				t.Errorf("takes a spare: %v (%q), want %v", why == "", why, tc.takes)
			}
		})
	}
}

// A spare's kube-apiserver command line is the one its claiming tenant's reconcile makes: the
// same paths, port and datastore connection give the same arguments, so the claim does not
// restart it.
func TestClaimedTenantKeepsTheSparesCommandLine(t *testing.T) {
	c := &Controller{opts: Options{PinnedVersion: "v1.36.3"}}
	tcp := defaultTCP()
	spec, err := parseTenantSpec(tcp)
	if err != nil {
		t.Fatal(err)
	}
	shape := c.spareShape("spare-0000abcd")
	etcd := etcdConn{URLs: []string{"https://127.0.0.1:2379"}, Prefix: "/spare-0000abcd", CAFile: "ca", CertFile: "c", KeyFile: "k"}
	args := func(s tenantSpec) []string {
		return apiServerArgs(planeArgs{Spec: s, Paths: tenantPaths{dir: "/state/spare-0000abcd"}, Address: "127.0.0.1", Port: 30001, Etcd: etcd})
	}
	if !slices.Equal(args(spec), args(shape)) {
		t.Errorf("the tenant's kube-apiserver arguments differ from the spare's:\n%v\n%v", args(spec), args(shape))
	}
	// Its etcd user and prefix are the spare's, not Steward's defaults for it.
	rec := tenantRecord{UID: spec.UID, FromSpare: shape.UID, DataStoreUser: shape.DataStoreUser, DataStorePrefix: "/spare-0000abcd/"}
	if got := storeTenant(spec, rec); got != (datastore.Tenant{User: "spare-0000abcd", Prefix: "/spare-0000abcd/"}) {
		t.Errorf("the claimed tenant's datastore tenant: %+v", got)
	}
	if got := storeTenant(spec, tenantRecord{UID: spec.UID}); got != datastore.NewTenant("c1-abcd1234_c1", string(tcp.GetUID())) {
		t.Errorf("a cold tenant's datastore tenant: %+v", got)
	}
}

// A claimed tenant's <state>/<uid> is a link to the spare's directory, which its paths name
// (the command lines name it); one never claimed is its own directory. A tenant is new only while
// neither is there.
func TestClaimedTenantPaths(t *testing.T) {
	state := t.TempDir()
	c := &Controller{opts: Options{StateDir: state}, planes: map[string]*plane{}}
	if got := c.pathsOf("u1"); got.dir != filepath.Join(state, "u1") {
		t.Errorf("an unclaimed tenant's directory: %s", got.dir)
	}
	if !c.newTenant("u1") {
		t.Error("nothing of u1 is there, yet it is not new")
	}
	if err := os.Mkdir(filepath.Join(state, "spare-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	for range 2 { // linking again is a no-op
		if err := c.linkTenant("u1", "spare-1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.pathsOf("u1"); got.dir != filepath.Join(state, "spare-1") {
		t.Errorf("a claimed tenant's directory: %s", got.dir)
	}
	if c.newTenant("u1") {
		t.Error("u1 claimed a spare, yet it is new")
	}
}

func toAnySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// The spares' admission plugins are those the TenantControlPlane CRD defaults: a TenantCluster
// that sets nothing gets them, and with others no new cluster would take a spare.
func TestDefaultAdmissionControllersAreTheCRDs(t *testing.T) {
	data, err := os.ReadFile("../../../artifacts/crds/steward.butlerlabs.dev_tenantcontrolplanes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Properties struct {
									Kubernetes struct {
										Properties struct {
											AdmissionControllers struct {
												Default []string `json:"default"`
											} `json:"admissionControllers"`
										} `json:"properties"`
									} `json:"kubernetes"`
								} `json:"properties"`
							} `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) == 0 {
		t.Fatal("the CRD has no versions")
	}
	for _, v := range crd.Spec.Versions {
		if got := v.Schema.OpenAPIV3Schema.Properties.Spec.Properties.Kubernetes.Properties.AdmissionControllers.Default; !slices.Equal(got, defaultAdmissionControllers) {
			t.Errorf("the CRD defaults admissionControllers to %v, the spares have %v", got, defaultAdmissionControllers)
		}
	}
}

// A spare takes its turn at the start gate as a tenant does: while the gate is full it waits in
// line, and it starts when a slot is handed to it (its notify says so on turn, as no tenant's
// key is there to queue).
func TestSpareWaitsItsTurnAtTheStartGate(t *testing.T) {
	gate := newStartGate(1)
	tenant := &plane{notify: func() {}, gate: gate}
	if !gate.acquire(tenant) {
		t.Fatal("the first start did not get the slot")
	}
	c := &Controller{}
	sp := &spare{turn: make(chan struct{}, 1)}
	sp.pl = &plane{notify: sp.notify(c), gate: gate}
	starts := 0
	sp.start = func() {
		starts++
		if gate.acquire(sp.pl) { // as ensure does before it starts kube-apiserver
			sp.pl.mu.Lock()
			sp.pl.setReadyLocked(true)
			sp.pl.mu.Unlock()
		}
	}
	sp.start()
	if !gate.waits(sp.pl) {
		t.Fatal("the spare does not wait in line while the gate is full")
	}
	done := make(chan bool)
	go func() { done <- awaitSpare(t.Context(), sp) == spareReady }()
	gate.release(tenant) // the tenant's kube-apiserver answered /readyz
	select {
	case ok := <-done:
		if !ok || starts != 2 {
			t.Errorf("awaitSpare: ready %v after %d starts, want true after 2", ok, starts)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the spare did not start when the slot was freed")
	}
}

// TestStuckSpareLeavesThePool: a spare whose kube-apiserver never answers /readyz is reported
// stuck once spareStartWait has passed, and leaves the pool (keepSpares then discards it and
// starts another), unless a tenant claimed it meanwhile.
func TestStuckSpareLeavesThePool(t *testing.T) {
	defer func(w time.Duration) { spareStartWait = w }(spareStartWait)
	spareStartWait = 200 * time.Millisecond
	sp := &spare{turn: make(chan struct{}, 1), start: func() {}}
	sp.pl = &plane{notify: func() {}, gate: newStartGate(1)}
	pool := newSparePool(1)
	pool.put(sp)
	if got := awaitSpare(t.Context(), sp); got != spareStuck {
		t.Fatalf("awaitSpare on a spare that never serves: %v, want spareStuck", got)
	}
	if !pool.remove(sp) || !pool.short() {
		t.Fatal("the stuck spare is still in the pool")
	}
	if pool.remove(sp) {
		t.Error("a spare no longer in the pool was removed again")
	}
}
