package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/wakeproxy"
)

// A paused cluster is neither woken nor put to sleep by its endpoint's use: woken, it would
// serve bindings its paused lifecycle cannot bring up to date with the Team.
func TestHibernationWishOfAPausedCluster(t *testing.T) {
	tc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "butler.butlerlabs.dev/v1alpha1", "kind": "TenantCluster",
		"metadata": map[string]any{"name": "prod", "namespace": "team-a"},
		"spec":     map[string]any{"hibernation": map[string]any{"hibernated": true}}}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{tenantClusters: "TenantClusterList"}, tc)
	c := &Controller{deps: &controllerkit.Deps{Dynamic: client}}
	name := types.NamespacedName{Namespace: "team-a", Name: "prod"}
	ctx := context.Background()
	if asleep, err := c.hibernationWish(ctx, name); err != nil || !asleep {
		t.Fatalf("asked to sleep: %v, %v", asleep, err)
	}
	tc.SetAnnotations(map[string]string{external.TenantClusterPausedAnnotation: "true"})
	if _, err := client.Resource(tenantClusters).Namespace("team-a").Update(ctx, tc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.hibernationWish(ctx, name); err == nil || !strings.Contains(err.Error(), "paused") {
		t.Errorf("paused: %v, want an error saying it is paused", err)
	}
}

// TestRecordWakeNamesNoAddress: the note a wake leaves on the TenantCluster, which every viewer
// of it reads, does not carry the client's address.
func TestRecordWakeNamesNoAddress(t *testing.T) {
	tc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "butler.butlerlabs.dev/v1alpha1", "kind": "TenantCluster",
		"metadata": map[string]any{"name": "prod", "namespace": "team-a"},
		"spec":     map[string]any{"hibernation": map[string]any{"hibernated": true, "wakeOnRequest": true}}}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{tenantClusters: "TenantClusterList"}, tc)
	c := &Controller{deps: &controllerkit.Deps{Dynamic: client}}
	name := types.NamespacedName{Namespace: "team-a", Name: "prod"}
	ctx := context.Background()
	if err := c.recordWake(ctx, name, &plane{notify: func() {}}, "203.0.113.7:51234"); err != nil {
		t.Fatal(err)
	}
	got, err := client.Resource(tenantClusters).Namespace("team-a").Get(ctx, "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	note := got.GetAnnotations()[hibernation.LastChangeAnnotation]
	if !strings.HasPrefix(note, "woken by a request") || strings.Contains(note, "203.0.113.7") {
		t.Errorf("the wake's note: %q, want one that names no address", note)
	}
}

// TestWakeOnRequestTurnedOnWhileServing: a tenant that served on its endpoint gets its listener
// only after capiDropsConnection (Cluster API's client of the endpoint must see it refuse and be
// dropped); one never published gets it at once.
func TestWakeOnRequestTurnedOnWhileServing(t *testing.T) {
	ports, err := localports.NewAllocator(localports.Tenants)
	if err != nil {
		t.Fatal(err)
	}
	c := &Controller{ports: ports, tcpQueue: controllerkit.NewQueue("test", func(context.Context, string) error { return nil }),
		wakeGate: wakeproxy.NewGate(wakeproxy.Limits{})}
	ctx := context.Background()
	for _, published := range []bool{true, false} {
		port, err := ports.Allocate("u")
		if err != nil {
			t.Fatal(err)
		}
		pl := &plane{rec: tenantRecord{UID: "u", Port: port}, paths: tenantPaths{dir: t.TempDir()}, notify: func() {}}
		tcp := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kamaji.clastix.io/v1alpha1", "kind": "TenantControlPlane",
			"metadata": map[string]any{"name": "prod", "namespace": "team-a",
				"annotations": map[string]any{hibernation.WakeOnRequestAnnotation: "true"}}}}
		if published {
			tcp.Object["status"] = map[string]any{"controlPlaneEndpoint": endpointString("127.0.0.1", port)}
		}
		if err := c.ensureWakeProxy(ctx, tcp, pl); err != nil {
			t.Fatal(err)
		}
		listening := pl.proxy != nil
		if pl.rec.InternalPort == 0 || listening == published {
			t.Errorf("published %v: internal port %d, listener %v", published, pl.rec.InternalPort, listening)
		}
		if published {
			if wait := time.Until(pl.rec.ListenAfter); wait < capiDropsConnection-5*time.Second {
				t.Errorf("the endpoint refuses for %s, want about %s", wait, capiDropsConnection)
			}
			pl.rec.ListenAfter = time.Now().Add(-time.Second)
			if err := c.ensureWakeProxy(ctx, tcp, pl); err != nil || pl.proxy == nil {
				t.Fatalf("after the wait: listener %v, %v", pl.proxy != nil, err)
			}
		}
		pl.closeProxy()
	}
}
