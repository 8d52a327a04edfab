package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/cmd/butler-apiserver/app"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
)

func exampleCluster(t *testing.T, namespace, name string) *v1alpha1.TenantCluster {
	t.Helper()
	tc := &v1alpha1.TenantCluster{}
	readManifest(t, "artifacts/examples/06-tenantcluster.yaml", tc)
	// The example's Team and ProviderConfig are those of its namespace, as they must be.
	tc.Namespace, tc.Name = namespace, name
	tc.Spec.TeamRef.Name, tc.Spec.ProviderConfigRef.Namespace = namespace, namespace
	return tc
}

func TestStatusSubresourceSplitsSpecAndStatus(t *testing.T) {
	ctx := context.Background()
	clusters := shared.Client.ButlerV1alpha1().TenantClusters("status")

	tc := exampleCluster(t, "status", "split")
	tc.Status.Phase = v1alpha1.TenantClusterReady // a client may not set status on create
	created, err := clusters.Create(ctx, tc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.Phase != "" {
		t.Errorf("create kept client-sent status.phase %q", created.Status.Phase)
	}

	// /status writes status and ignores spec.
	created.Status.Phase = v1alpha1.TenantClusterProvisioning
	created.Status.ControlPlaneEndpoint = "https://10.40.1.10:6443"
	created.Spec.Workers.Replicas = 9
	afterStatus, err := clusters.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if afterStatus.Status.Phase != v1alpha1.TenantClusterProvisioning || afterStatus.Status.ControlPlaneEndpoint == "" {
		t.Errorf("status update lost status: %+v", afterStatus.Status)
	}
	if afterStatus.Spec.Workers.Replicas != 3 || afterStatus.Generation != 1 {
		t.Errorf("status update changed spec: replicas %d, generation %d", afterStatus.Spec.Workers.Replicas, afterStatus.Generation)
	}

	// The main resource writes spec and ignores status.
	afterStatus.Status.Phase = v1alpha1.TenantClusterFailed
	afterStatus.Spec.Workers.Replicas = 4
	afterSpec, err := clusters.Update(ctx, afterStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if afterSpec.Status.Phase != v1alpha1.TenantClusterProvisioning {
		t.Errorf("spec update changed status.phase to %q", afterSpec.Status.Phase)
	}
	if afterSpec.Spec.Workers.Replicas != 4 || afterSpec.Generation != 2 {
		t.Errorf("spec update: replicas %d generation %d, want 4 and 2", afterSpec.Spec.Workers.Replicas, afterSpec.Generation)
	}

	// A bad status is refused with the field named.
	afterSpec.Status.Phase = "Exploded"
	_, err = clusters.UpdateStatus(ctx, afterSpec, metav1.UpdateOptions{})
	expectInvalidFields(t, err, "status.phase")
}

func TestDefaultsAreStored(t *testing.T) {
	ctx := context.Background()
	tc := &v1alpha1.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "minimal", Namespace: "defaults"},
		Spec: v1alpha1.TenantClusterSpec{
			KubernetesVersion: "v1.32.1",
			Workers:           v1alpha1.WorkersSpec{Replicas: 1},
		},
	}
	got, err := shared.Client.ButlerV1alpha1().TenantClusters("defaults").Create(ctx, tc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := got.Spec
	if s.ControlPlane.Type != v1alpha1.ControlPlaneHosted || *s.ControlPlane.Replicas != 1 ||
		s.Networking.PodCIDR != "10.244.0.0/16" || s.Networking.ServiceCIDR != "10.96.0.0/12" ||
		*s.Workers.MachineTemplate.CPU != 4 || s.Workers.MachineTemplate.Memory.String() != "16Gi" ||
		s.Workers.MachineTemplate.DiskSize.String() != "100Gi" || s.Workers.MachineTemplate.OS.Type != v1alpha1.OSTalos {
		t.Errorf("defaults not applied: %+v", s)
	}
}

func TestInvalidTenantClusterNamesEveryField(t *testing.T) {
	ctx := context.Background()
	tc := &v1alpha1.TenantCluster{}
	readManifest(t, "test/testdata/invalid-tenantcluster.yaml", tc)
	tc.Namespace = "invalid"
	clusters := shared.Client.ButlerV1alpha1().TenantClusters(tc.Namespace)

	_, err := clusters.Create(ctx, tc, metav1.CreateOptions{})
	expectInvalidFields(t, err, "spec.networking.podCIDR", "spec.kubernetesVersion", "spec.workers.replicas")
	if _, err := clusters.Get(ctx, tc.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused object was stored: %v", err)
	}
}

func TestImmutableFieldsAndVersionSkew(t *testing.T) {
	ctx := context.Background()
	clusters := shared.Client.ButlerV1alpha1().TenantClusters("immutable")
	created, err := clusters.Create(ctx, exampleCluster(t, "immutable", "prod"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	changed := created.DeepCopy()
	changed.Spec.Networking.PodCIDR = "10.245.0.0/16"
	changed.Spec.ControlPlane.Type = v1alpha1.ControlPlaneStandalone
	changed.Spec.ControlPlane.Replicas = ptr.To[int32](3) // valid for standalone: only immutability is wrong
	changed.Spec.Workers.MachineTemplate.OS.Type = v1alpha1.OSFlatcar
	changed.Spec.KubernetesVersion = "v1.33.0" // from v1.31.4: skips a minor
	_, err = clusters.Update(ctx, changed, metav1.UpdateOptions{})
	expectInvalidFields(t, err, "spec.networking.podCIDR", "spec.controlPlane.type",
		"spec.workers.machineTemplate.os.type", "spec.kubernetesVersion")

	downgrade := created.DeepCopy()
	downgrade.Spec.KubernetesVersion = "v1.30.9"
	_, err = clusters.Update(ctx, downgrade, metav1.UpdateOptions{})
	expectInvalidFields(t, err, "spec.kubernetesVersion")

	upgrade := created.DeepCopy()
	upgrade.Spec.KubernetesVersion = "v1.32.0"
	if _, err := clusters.Update(ctx, upgrade, metav1.UpdateOptions{}); err != nil {
		t.Errorf("one minor forward must be accepted: %v", err)
	}
}

func TestButlerConfigIsASingleton(t *testing.T) {
	bc := &v1alpha1.ButlerConfig{}
	readManifest(t, "artifacts/examples/00-butlerconfig.yaml", bc)
	bc.Name = "other"
	_, err := shared.Client.ButlerV1alpha1().ButlerConfigs().Create(context.Background(), bc, metav1.CreateOptions{})
	expectInvalidFields(t, err, "metadata.name")
}

func TestWarningsForUnprovenOperatingSystems(t *testing.T) {
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(shared.Config)
	cfg.WarningHandler = warnings
	client := clientset.NewForConfigOrDie(cfg)

	// Kairos: Bottlerocket would be refused on the example's Harvester ProviderConfig, when another
	// test has created it (ProviderSupport admission).
	tc := exampleCluster(t, "warnings", "kairos")
	tc.Spec.Workers.MachineTemplate.OS.Type = v1alpha1.OSKairos
	if _, err := client.ButlerV1alpha1().TenantClusters("warnings").Create(context.Background(), tc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := warnings.all(); len(got) != 1 || !strings.Contains(got[0], "kairos") {
		t.Errorf("warnings %q, want one naming kairos", got)
	}
}

func TestFieldSelectors(t *testing.T) {
	ctx := context.Background()
	ns := "selectors"
	c := shared.Client.ButlerV1alpha1()

	for _, name := range []string{"ready", "pending"} {
		tc, err := c.TenantClusters(ns).Create(ctx, exampleCluster(t, ns, name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if name == "ready" {
			tc.Status.Phase = v1alpha1.TenantClusterReady
			if _, err := c.TenantClusters(ns).UpdateStatus(ctx, tc, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	expectNames(t, "status.phase=Ready", func(sel string) ([]string, error) {
		l, err := c.TenantClusters(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		return namesOf(l, err)
	}, "ready")

	for _, cluster := range []string{"alpha", "beta"} {
		ta := &v1alpha1.TenantAddon{}
		readManifest(t, "artifacts/examples/07-tenantaddon.yaml", ta)
		ta.Namespace, ta.Name, ta.Spec.ClusterRef.Name = ns, cluster+"-metrics", cluster
		if _, err := c.TenantAddons(ns).Create(ctx, ta, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	expectNames(t, "spec.clusterRef.name=beta", func(sel string) ([]string, error) {
		l, err := c.TenantAddons(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		return namesOf(l, err)
	}, "beta-metrics")

	for _, pool := range []string{"east", "west"} {
		createPool(t, ns, pool)
		ipa := &v1alpha1.IPAllocation{}
		readManifest(t, "artifacts/examples/04-ipallocation.yaml", ipa)
		ipa.Namespace, ipa.Name, ipa.Spec.PoolRef.Name = ns, pool+"-lb", pool
		if _, err := c.IPAllocations(ns).Create(ctx, ipa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	expectNames(t, "spec.poolRef.name=west", func(sel string) ([]string, error) {
		l, err := c.IPAllocations(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		return namesOf(l, err)
	}, "west-lb")

	_, err := c.TenantClusters(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.kubernetesVersion=v1.31.4"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: want 400, got %v", err)
	}
}

func TestTableColumns(t *testing.T) {
	ctx := context.Background()
	if _, err := shared.Client.ButlerV1alpha1().TenantClusters("table").Create(ctx, exampleCluster(t, "table", "prod"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	raw, err := shared.Client.Discovery().RESTClient().Get().
		AbsPath("/apis/butler.butlerlabs.dev/v1alpha1/namespaces/table/tenantclusters").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	want := []string{"Name", "Phase", "Progress", "Version", "Workers", "Endpoint", "Age", "OS", "Team", "Provider"}
	if !slices.Equal(columns, want) {
		t.Fatalf("columns %v, want %v", columns, want)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	if cells[0] != "prod" || cells[3] != "v1.31.4" || cells[4] != "0/3" || cells[7] != "talos" || cells[8] != "table" {
		t.Errorf("row %v", cells)
	}
}

func TestDiscoveryNamesEveryKind(t *testing.T) {
	resources, err := shared.Client.Discovery().ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]metav1.APIResource{}
	for _, r := range resources.APIResources {
		byName[r.Name] = r
	}
	want := map[string]struct {
		short      string
		namespaced bool
	}{
		"butlerconfigs": {"bc", false}, "teams": {"tm", false}, "tenantclusters": {"tc", true},
		"tenantaddons": {"ta", true}, "addondefinitions": {"ad", false}, "networkpools": {"np", true},
		"ipallocations": {"ipa", true}, "providerconfigs": {"pc", true}, "tenantclustersnapshots": {"tcs", true},
		"updatestrategies": {"ustr", true}, "updateruns": {"ur", true}, "managementaddons": {"ma", false},
	}
	for name, w := range want {
		r, ok := byName[name]
		if !ok {
			t.Errorf("%s not served", name)
			continue
		}
		if !slices.Equal(r.ShortNames, []string{w.short}) || !slices.Equal(r.Categories, []string{"butler"}) ||
			r.Namespaced != w.namespaced || r.SingularName == "" {
			t.Errorf("%s: shortNames %v categories %v namespaced %v singular %q", name, r.ShortNames, r.Categories, r.Namespaced, r.SingularName)
		}
		if name != "addondefinitions" && name != "updatestrategies" {
			if _, ok := byName[name+"/status"]; !ok {
				t.Errorf("%s/status not served", name)
			}
		}
	}
	for _, name := range []string{"addondefinitions", "updatestrategies"} {
		if _, ok := byName[name+"/status"]; ok {
			t.Errorf("%s/status served, but it has no status", name)
		}
	}
	if r, ok := byName["updateruns/approve"]; !ok || !slices.Equal(r.Verbs, []string{"create"}) || r.Kind != "UpdateRunApproval" {
		t.Errorf("updateruns/approve: %+v (served %v), want create of UpdateRunApproval", r, ok)
	}
}

func TestDataSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first := startServer(t, dir)
	created, err := first.Client.ButlerV1alpha1().TenantClusters("restart").Create(ctx, exampleCluster(t, "restart", "prod"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigBefore, err := os.ReadFile(dir + "/admin.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	second := startServer(t, dir)
	got, err := second.Client.ButlerV1alpha1().TenantClusters("restart").Get(ctx, "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if got.UID != created.UID || got.Spec.KubernetesVersion != created.Spec.KubernetesVersion {
		t.Errorf("after restart: uid %s version %s, want %s %s", got.UID, got.Spec.KubernetesVersion, created.UID, created.Spec.KubernetesVersion)
	}
	// The admin's certificate survives too, so a kubeconfig handed out before still works.
	kubeconfigAfter, err := os.ReadFile(dir + "/admin.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kubeconfigAfter), extractClientCert(string(kubeconfigBefore))) {
		t.Errorf("restart replaced the admin client certificate")
	}
}

func TestUnauthenticatedIsRefused(t *testing.T) {
	cfg := rest.AnonymousClientConfig(shared.Config)
	client := clientset.NewForConfigOrDie(cfg)
	_, err := client.ButlerV1alpha1().TenantClusters("").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err) {
		t.Errorf("anonymous list: want 401 or 403, got %v", err)
	}
}

// expectInvalidFields checks err is one 422 whose causes name exactly these fields.
func expectInvalidFields(t *testing.T, err error, fields ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid naming %v, got %v", fields, err)
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		t.Fatalf("422 without details: %v", err)
	}
	var got []string
	for _, cause := range status.Status().Details.Causes {
		got = append(got, cause.Field)
	}
	slices.Sort(got)
	want := slices.Clone(fields)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("422 names fields %v, want %v (%v)", got, want, err)
	}
}

func expectNames(t *testing.T, selector string, list func(string) ([]string, error), want ...string) {
	t.Helper()
	got, err := list(selector)
	if err != nil {
		t.Fatalf("list %s: %v", selector, err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("list %s: got %v, want %v", selector, got, want)
	}
}

// namesOf returns the names of a list's items, in order.
func namesOf(list runtime.Object, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, item := range items {
		o, err := meta.Accessor(item)
		if err != nil {
			return nil, err
		}
		names = append(names, o.GetName())
	}
	return names, nil
}

type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.warnings)
}

func extractClientCert(kubeconfig string) string {
	for _, line := range strings.Split(kubeconfig, "\n") {
		if strings.Contains(line, "client-certificate-data:") {
			return strings.TrimSpace(line)
		}
	}
	return "<no client certificate in kubeconfig>"
}

func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	clusters := shared.Client.ButlerV1alpha1().TenantClusters("scale")
	if _, err := clusters.Create(ctx, exampleCluster(t, "scale", "prod"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scale, err := clusters.GetScale(ctx, "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 3 || scale.Status.Replicas != 0 {
		t.Fatalf("scale spec %d status %d, want 3 and 0", scale.Spec.Replicas, scale.Status.Replicas)
	}
	stale := scale.DeepCopy()

	scale.Spec.Replicas = 5
	if _, err := clusters.UpdateScale(ctx, "prod", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tc, err := clusters.Get(ctx, "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tc.Spec.Workers.Replicas != 5 || tc.Generation != 2 {
		t.Errorf("after scale: replicas %d generation %d, want 5 and 2", tc.Spec.Workers.Replicas, tc.Generation)
	}

	stale.Spec.Replicas = 1
	if _, err := clusters.UpdateScale(ctx, "prod", stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("scale with a stale resourceVersion: want 409, got %v", err)
	}
	current, err := clusters.GetScale(ctx, "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	current.Spec.Replicas = -1
	_, err = clusters.UpdateScale(ctx, "prod", current, metav1.UpdateOptions{})
	expectInvalidFields(t, err, "spec.replicas")
}

// createPool creates the example NetworkPool as name in namespace.
func createPool(t *testing.T, namespace, name string) {
	t.Helper()
	pool := &v1alpha1.NetworkPool{}
	readManifest(t, "artifacts/examples/03-networkpool.yaml", pool)
	pool.Namespace, pool.Name = namespace, name
	if _, err := shared.Client.ButlerV1alpha1().NetworkPools(namespace).Create(context.Background(), pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Objects are stored as protobuf. Values written as JSON (an older server, or
// --storage-media-type=application/json) are still read, and become protobuf when next written.
func TestStorageMediaType(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const key = "/registry/butler.butlerlabs.dev/butler.butlerlabs.dev/tenantclusters/media/"
	protobufMagic := []byte("k8s\x00")
	stored := func(s *testServer, name string) []byte {
		t.Helper()
		etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{s.EtcdURL}, DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer etcd.Close()
		resp, err := etcd.Get(ctx, key+name)
		if err != nil {
			t.Fatalf("etcd get %s: %v", key+name, err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("etcd get %s: %d values", key+name, len(resp.Kvs))
		}
		return resp.Kvs[0].Value
	}

	first := startServer(t, dir, func(o *app.Options) { o.Recommended.Etcd.DefaultStorageMediaType = "application/json" })
	if _, err := first.Client.ButlerV1alpha1().TenantClusters("media").Create(ctx, exampleCluster(t, "media", "old"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := stored(first, "old"); !bytes.HasPrefix(v, []byte("{")) {
		t.Fatalf("with --storage-media-type=application/json the value is %q...", v[:min(len(v), 8)])
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	second := startServer(t, dir)
	clusters := second.Client.ButlerV1alpha1().TenantClusters("media")
	if _, err := clusters.Create(ctx, exampleCluster(t, "media", "new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := stored(second, "new"); !bytes.HasPrefix(v, protobufMagic) {
		t.Errorf("a new object is stored as %q..., not protobuf", v[:min(len(v), 8)])
	}
	old, err := clusters.Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the JSON value: %v", err)
	}
	old.Labels = map[string]string{"rewritten": "yes"}
	if _, err := clusters.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := stored(second, "old"); !bytes.HasPrefix(v, protobufMagic) {
		t.Errorf("after an update the JSON value is still %q...", v[:min(len(v), 8)])
	}
	list, err := clusters.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list over both media types: %v, %d items", err, len(list.Items))
	}
}
