package controlplane

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
)

func storeOf(objs ...*unstructured.Unstructured) cache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
	for _, o := range objs {
		_ = inf.GetStore().Add(o)
	}
	return inf
}

func tcpObject(uid, dataStore string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": uid, "namespace": "ns"}}}
	u.SetUID(types.UID(uid))
	if dataStore != "" {
		_ = unstructured.SetNestedField(u.Object, dataStore, "status", "storage", "dataStoreName")
	}
	return u
}

// Tenants placed at once, while others record where they were set up (as ensureTenantStore
// does) and their records change (as movePort's do), count each other and the tenants only the TenantControlPlanes' statuses name (not yet
// reconciled since a restart): two DataStores of 5 with one tenant already on a fill up to 5 and
// 5, and the eleventh is refused. Run with -race: placement reads no plane's record but its own.
func TestPlaceTenantsAtOnce(t *testing.T) {
	c := &Controller{
		opts:       Options{DataStoreMaxTenants: 5},
		planes:     map[string]*plane{},
		placed:     map[string]string{},
		dataStores: storeOf(datastore.Object("a", []string{"127.0.0.1:1"}, "ns", "s"), datastore.Object("b", []string{"127.0.0.1:2"}, "ns", "s")),
		tcps:       storeOf(tcpObject("before-restart", "a")),
	}
	const n = 10
	tcps := make([]*unstructured.Unstructured, n)
	planes := make([]*plane, n)
	for i := range n {
		uid := fmt.Sprintf("uid-%d", i)
		tcps[i] = tcpObject(uid, "")
		planes[i] = &plane{rec: tenantRecord{UID: uid}}
		c.planes[uid] = planes[i]
	}
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	// Meanwhile each plane's record is rewritten under its own lock, as movePort does.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			for _, pl := range planes {
				pl.mu.Lock()
				rec := pl.rec
				rec.Port++
				pl.rec = rec
				pl.mu.Unlock()
			}
		}
	}()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = placeTCP(c, tcps[i], "", planes[i])
			if errs[i] == nil {
				c.setUpOn(planes[i], tenantRecord{UID: fmt.Sprintf("uid-%d", i), DataStore: got[i]})
			}
		}()
	}
	wg.Wait()
	count := map[string]int{"a": 1} // the tenant from before the restart
	refused := 0
	for i := range n {
		if errs[i] != nil {
			refused++
			continue
		}
		count[got[i]]++
	}
	if count["a"] != 5 || count["b"] != 5 || refused != 1 {
		t.Errorf("placed %v and refused %d, want 5 on each and 1 refused", count, refused)
	}
}

// A DataStore named by the cluster's dataStoreRef holds its max-tenants too: with two tenants on
// "a" (limit 2), a third naming it waits for room, naming "b" is placed there, and a tenant
// already on "a" stays (it is counted, not refused).
func TestNamedDataStoreHoldsItsLimit(t *testing.T) {
	a := datastore.Object("a", []string{"127.0.0.1:1"}, "ns", "s")
	a.SetAnnotations(map[string]string{datastore.MaxTenantsAnnotation: "2"})
	c := &Controller{
		opts:       Options{DataStoreMaxTenants: 5},
		planes:     map[string]*plane{},
		placed:     map[string]string{},
		dataStores: storeOf(a, datastore.Object("b", []string{"127.0.0.1:2"}, "ns", "s")),
		tcps:       storeOf(tcpObject("one", "a"), tcpObject("two", "a")),
	}
	place := func(tcp *unstructured.Unstructured, ds string) (string, error) {
		return placeTCP(c, tcp, ds, &plane{rec: tenantRecord{UID: string(tcp.GetUID())}})
	}
	if got, err := place(tcpObject("three", ""), "a"); err == nil || !strings.Contains(err.Error(), "DataStore a is full") {
		t.Errorf("a third tenant naming the full DataStore a: %q, %v", got, err)
	}
	if got, err := place(tcpObject("three", ""), "b"); got != "b" || err != nil {
		t.Errorf("naming b: %q, %v", got, err)
	}
	if got, err := place(tcpObject("two", "a"), "a"); got != "a" || err != nil {
		t.Errorf("a tenant already on a: %q, %v", got, err)
	}
}

// A Team whose cluster names no DataStore was placed on the DataStore with the fewest tenants,
// one the platform offers to another Team only (butler.butlerlabs.dev/teams) among them: a new,
// dedicated DataStore, empty, drew every other Team's new clusters. Placement takes only
// DataStores not offered to named Teams (or offered to every Team, "*"); a Team offered one
// names it.
func TestAttackPlacementOnAnotherTeamsDataStore(t *testing.T) {
	dedicated := datastore.Object("team-b-only", []string{"127.0.0.1:1"}, "ns", "s")
	dedicated.SetAnnotations(map[string]string{external.DataStoreTeamsAnnotation: "team-b"})
	everyone := datastore.Object("everyone", []string{"127.0.0.1:3"}, "ns", "s")
	everyone.SetAnnotations(map[string]string{external.DataStoreTeamsAnnotation: " * "})
	c := &Controller{
		opts:       Options{DataStoreMaxTenants: 5},
		planes:     map[string]*plane{},
		placed:     map[string]string{},
		dataStores: storeOf(dedicated, datastore.Object("shared", []string{"127.0.0.1:2"}, "ns", "s"), everyone),
		tcps:       storeOf(tcpObject("one", "shared"), tcpObject("two", "everyone")),
	}
	place := func(tcp *unstructured.Unstructured, ds string) (string, error) {
		return placeTCP(c, tcp, ds, &plane{rec: tenantRecord{UID: string(tcp.GetUID())}})
	}
	for i := range 4 {
		got, err := place(tcpObject(fmt.Sprint("new-", i), ""), "")
		if err != nil || got == "team-b-only" {
			t.Fatalf("tenant %d placed on %q (%v), want shared or everyone: team-b-only is offered to team-b only", i, got, err)
		}
	}
	if got, err := place(tcpObject("named", ""), "team-b-only"); got != "team-b-only" || err != nil {
		t.Errorf("naming team-b-only (admitted for team-b): %q, %v", got, err)
	}
}

// placeTCP places tcp as findPlane's steps do: asking for ds ("" for placement).
func placeTCP(c *Controller, tcp *unstructured.Unstructured, ds string, pl *plane) (string, error) {
	published, _, _ := publishedStorage(tcp)
	return c.placeTenant(tenantSpec{UID: string(tcp.GetUID()), DataStore: ds}, published, pl)
}
