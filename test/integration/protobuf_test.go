package integration

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
)

const protobufMediaType = runtime.ContentTypeProtobuf // application/vnd.kubernetes.protobuf

// exchange is one request the client sent and the media type the server answered with.
type exchange struct {
	request     string // "METHOD path"
	sent        string // request Content-Type, if it had a body
	contentType string // response Content-Type
}

// recorder is a WrapTransport that notes the Content-Type of every request and response.
type recorder struct {
	mu        sync.Mutex
	exchanges []exchange
}

func (r *recorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			r.mu.Lock()
			r.exchanges = append(r.exchanges, exchange{
				request:     req.Method + " " + req.URL.Path,
				sent:        req.Header.Get("Content-Type"),
				contentType: resp.Header.Get("Content-Type"),
			})
			r.mu.Unlock()
		}
		return resp, err
	})
}

// butlerExchanges are the recorded exchanges with the butler group (not discovery or /readyz).
func (r *recorder) butlerExchanges() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []exchange
	for _, e := range r.exchanges {
		if strings.Contains(e.request, "/apis/"+v1alpha1.GroupName+"/") {
			out = append(out, e)
		}
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// recordingClient is a clientset on the shared server whose traffic rec sees; configure may
// change the wire format.
func recordingClient(t *testing.T, configure func(*rest.Config)) (clientset.Interface, *recorder) {
	t.Helper()
	rec := &recorder{}
	cfg := rest.CopyConfig(shared.Config)
	configure(cfg)
	cfg.Wrap(rec.wrap)
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, rec
}

// mediaType is the bare media type of a Content-Type header, without parameters.
func mediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.TrimSpace(mt)
}

// TestProtobufThroughTheServer drives the generated clientset in protobuf: create, get, list,
// update and watch TenantClusters and NetworkPools, and checks that every request body and every
// response the server sent really was protobuf.
func TestProtobufThroughTheServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "protobuf"

	client, rec := recordingClient(t, func(cfg *rest.Config) {
		cfg.ContentType = protobufMediaType
		cfg.AcceptContentTypes = protobufMediaType
	})
	clusters := client.ButlerV1alpha1().TenantClusters(ns)
	pools := client.ButlerV1alpha1().NetworkPools(ns)

	// Watch first, so the creates below arrive over a protobuf watch stream.
	w, err := clusters.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	tc := exampleCluster(t, ns, "proto")
	tc.Spec.ControlPlane.CertSANs = []string{"proto.example.com"}
	created, err := clusters.Create(ctx, tc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.Spec.KubernetesVersion != tc.Spec.KubernetesVersion ||
		len(created.Spec.ControlPlane.CertSANs) != 1 || created.Spec.Workers.Replicas != tc.Spec.Workers.Replicas {
		t.Errorf("create answered %+v", created.Spec)
	}
	// Defaults (applied by the server) come back through protobuf too.
	if created.Spec.Networking.PodCIDR == "" || created.Spec.ControlPlane.Type == "" {
		t.Errorf("defaults missing from the protobuf answer: %+v", created.Spec)
	}

	select {
	case ev := <-w.ResultChan():
		got, ok := ev.Object.(*v1alpha1.TenantCluster)
		if ev.Type != watch.Added || !ok || got.Name != "proto" {
			t.Errorf("watch event %s %#v, want ADDED TenantCluster proto", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event for the created TenantCluster")
	}

	got, err := clusters.Get(ctx, "proto", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != created.ResourceVersion || got.Spec.ControlPlane.CertSANs[0] != "proto.example.com" {
		t.Errorf("get answered rv %s, spec %+v", got.ResourceVersion, got.Spec)
	}
	got.Spec.Workers.Replicas++
	updated, err := clusters.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Spec.Workers.Replicas != got.Spec.Workers.Replicas || updated.Generation != 2 {
		t.Errorf("update answered replicas %d, generation %d", updated.Spec.Workers.Replicas, updated.Generation)
	}
	list, err := clusters.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "proto" || list.ResourceVersion == "" {
		t.Errorf("list answered %d items, rv %q", len(list.Items), list.ResourceVersion)
	}

	np := &v1alpha1.NetworkPool{}
	readManifest(t, "artifacts/examples/03-networkpool.yaml", np)
	np.Namespace, np.Name = ns, "proto-pool"
	createdPool, err := pools.Create(ctx, np, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if createdPool.Spec.CIDR != np.Spec.CIDR || len(createdPool.Spec.Reserved) != len(np.Spec.Reserved) {
		t.Errorf("create answered %+v, want %+v", createdPool.Spec, np.Spec)
	}
	gotPool, err := pools.Get(ctx, "proto-pool", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gotPool.Spec.CIDR != np.Spec.CIDR || gotPool.UID != createdPool.UID {
		t.Errorf("get answered %+v", gotPool.Spec)
	}
	poolList, err := pools.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(poolList.Items) != 1 || poolList.Items[0].Spec.CIDR != np.Spec.CIDR {
		t.Errorf("list answered %+v", poolList.Items)
	}

	// Errors come back as a protobuf-encoded Status the client still understands.
	if _, err := pools.Get(ctx, "missing", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("get of a missing pool: %v, want not found", err)
	}

	exchanges := rec.butlerExchanges()
	// watch, create, get, update, list of clusters; create, get, list, failed get of pools.
	if len(exchanges) < 9 {
		t.Fatalf("recorded only %d requests to the butler group: %+v", len(exchanges), exchanges)
	}
	for _, e := range exchanges {
		if mediaType(e.contentType) != protobufMediaType {
			t.Errorf("%s: response Content-Type %q, want %s", e.request, e.contentType, protobufMediaType)
		}
		if e.sent != "" && mediaType(e.sent) != protobufMediaType {
			t.Errorf("%s: request Content-Type %q, want %s", e.request, e.sent, protobufMediaType)
		}
	}
	var sawWatch bool
	for _, e := range exchanges {
		sawWatch = sawWatch || strings.Contains(e.contentType, "stream=watch")
	}
	if !sawWatch {
		t.Errorf("no protobuf watch stream among %+v", exchanges)
	}
}

// TestJSONStaysTheDefault checks that a clientset with no content type configured (as kubectl
// and most clients are) still talks JSON.
func TestJSONStaysTheDefault(t *testing.T) {
	ctx := context.Background()
	client, rec := recordingClient(t, func(*rest.Config) {})
	if _, err := client.ButlerV1alpha1().TenantClusters("protobuf-default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	exchanges := rec.butlerExchanges()
	if len(exchanges) != 1 || mediaType(exchanges[0].contentType) != runtime.ContentTypeJSON {
		t.Errorf("default client exchanges %+v, want one application/json answer", exchanges)
	}
}
