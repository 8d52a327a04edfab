package app

import (
	"net/http/httptest"
	"testing"

	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// Why butler-apiserver keeps its own priority and fairness for the requests kube-apiserver's
// front proxy brings (issue 40; docs/architecture.md, "Priority and fairness"): kube-apiserver's
// work estimator has no object count for a resource another server serves, so it charges every
// LIST of TenantClusters the minimum seat, however many there are. Only butler-apiserver's
// estimator, whose storage counts its own objects, charges a LIST of 5,000 TenantClusters what it
// costs. Should kube-apiserver ever count aggregated resources, this fails and the choice can be
// made again.
func TestOnlyButlerChargesAListOfTenantClustersItsCost(t *testing.T) {
	const plName, maxSeats = "global-default", 100
	tenantClusters := apirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: "butler.butlerlabs.dev",
		APIVersion: "v1alpha1", Resource: "tenantclusters", Path: "/apis/butler.butlerlabs.dev/v1alpha1/tenantclusters"}
	seats := func(stats func(string) (storage.Stats, error)) int {
		r := httptest.NewRequest("GET", tenantClusters.Path, nil)
		r = r.WithContext(apirequest.WithRequestInfo(r.Context(), &tenantClusters))
		estimate := fcrequest.NewWorkEstimator(stats, func(*apirequest.RequestInfo) int { return 0 },
			fcrequest.DefaultWorkEstimatorConfig(), func(string) uint64 { return maxSeats })
		we := estimate(r, "global-default", plName)
		return we.MaxSeats()
	}
	kube := seats(func(string) (storage.Stats, error) { return storage.Stats{}, fcrequest.ObjectCountNotFoundErr })
	butler := seats(func(key string) (storage.Stats, error) {
		if key != "tenantclusters.butler.butlerlabs.dev" {
			t.Errorf("counted %q", key)
		}
		return storage.Stats{ObjectCount: 5000, EstimatedAverageObjectSizeBytes: 4 << 10}, nil
	})
	t.Logf("a LIST of 5,000 TenantClusters: kube-apiserver charges %d seat(s), butler-apiserver %d", kube, butler)
	if kube != 1 {
		t.Errorf("kube-apiserver's estimate of an aggregated LIST is %d seats, not the minimum: its own priority and fairness now meters it", kube)
	}
	if butler <= kube {
		t.Errorf("butler-apiserver's estimate of a LIST of 5,000 TenantClusters is %d seat(s), no more than kube-apiserver's %d", butler, kube)
	}
}
