package quota

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func TestProviderUse(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		clusterNS, pcNS      string
		exists               bool
		scopeType, scopeTeam string
		allowed              bool
	}{
		{"own namespace", "team-a", "team-a", true, "", "", true},
		{"own namespace, not yet created", "team-a", "team-a", false, "", "", true},
		{"another team's, unscoped", "team-a", "team-b", true, "", "", false},
		{"another team's, scoped to that team", "team-a", "team-b", true, "team", "team-b", false},
		{"shared with the cluster's team", "team-a", "platform", true, "team", "team-a", true},
		{"shared with the platform", "team-a", "platform", true, "platform", "", true},
		{"missing elsewhere", "team-a", "platform", false, "platform", "", false},
	} {
		err := ProviderUse(tt.clusterNS, tt.pcNS, "pc", tt.exists, tt.scopeType, tt.scopeTeam)
		if (err == nil) != tt.allowed {
			t.Errorf("%s: %v, want allowed=%v", tt.name, err, tt.allowed)
		}
		if err != nil && (!strings.Contains(err.Error(), ProviderUseRule) ||
			!strings.Contains(err.Error(), fmt.Sprintf("ProviderConfig %s/pc does not exist or is not shared with namespace %q", tt.pcNS, tt.clusterNS))) {
			t.Errorf("%s: %v does not name the rule", tt.name, err)
		}
	}
}

// createWith admits a create on the ProviderConfig's ledger and stores the cluster.
func (s *memStore) createWith(l *Ledger, tc *butler.TenantCluster) error {
	err := l.AdmitProvider(context.Background(), ProviderRequest{ProviderNamespace: "platform", Provider: "pc",
		Uses: func(*butler.TenantCluster) bool { return true }, Namespace: tc.Namespace, Name: tc.Name,
		UID: string(tc.UID), New: ClusterUsage(tc)})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clusters[tc.Namespace+"/"+tc.Name] = tc
	return nil
}

func TestProviderLimitsUnderConcurrentCreates(t *testing.T) {
	s := newMemStore(nil)
	s.provider = &butler.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "pc"},
		Spec: butler.ProviderConfigSpec{Limits: &butler.ProviderLimits{MaxClustersPerTeam: ptr.To[int32](3), MaxNodesPerTeam: ptr.To[int32](5)}}}
	l := &Ledger{Store: s}
	var wg sync.WaitGroup
	ok := map[string]*atomic.Int32{"a": {}, "b": {}}
	for _, ns := range []string{"a", "b"} {
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch err := s.createWith(l, cluster(ns, fmt.Sprint("c", i), 1)); {
				case err == nil:
					ok[ns].Add(1)
				case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "maxClustersPerTeam is 3, in use 3, requested 1"):
					t.Errorf("%s/c%d: %v", ns, i, err)
				}
			}()
		}
	}
	wg.Wait()
	if ok["a"].Load() != 3 || ok["b"].Load() != 3 {
		t.Fatalf("created %d in a and %d in b, want 3 each (the limit is per team); %d CAS retries", ok["a"].Load(), ok["b"].Load(), s.casFails.Load())
	}
	// Nodes: 3 in use of 5; 3 more for one of them is refused, naming the limit.
	stored, _ := s.Clusters(context.Background(), "a", "")
	one := &stored[0]
	err := l.AdmitProvider(context.Background(), ProviderRequest{ProviderNamespace: "platform", Provider: "pc",
		Uses: func(*butler.TenantCluster) bool { return true }, Namespace: "a", Name: one.Name, BaseRV: "1",
		Old: ClusterUsage(one), New: ClusterUsageWithWorkers(one, 4)})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `exceeds the limits of ProviderConfig platform/pc for namespace "a": maxNodesPerTeam is 5, in use 3, requested 3 (would be 6)`) {
		t.Errorf("scale past maxNodesPerTeam: %v", err)
	}
	// Clusters that do not use the ProviderConfig do not count.
	s.provider.Annotations = nil
	err = l.AdmitProvider(context.Background(), ProviderRequest{ProviderNamespace: "platform", Provider: "pc",
		Uses: func(tc *butler.TenantCluster) bool { return tc.Name == one.Name }, Namespace: "a", Name: "x", UID: "x",
		New: ClusterUsage(cluster("a", "x", 1))})
	if err != nil {
		t.Errorf("only one cluster uses it: %v", err)
	}
	// Delete resolves the create's reservation at once.
	if err := l.ResolveProviderCreate(context.Background(), "platform", "pc", "x"); err != nil || len(Reservations(s.provider)) != 0 {
		t.Errorf("resolve: %v, left %v", err, Reservations(s.provider))
	}
}
