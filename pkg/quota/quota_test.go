package quota

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func cluster(ns, name string, workers int32) *butler.TenantCluster {
	return &butler.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name), ResourceVersion: "1"},
		Spec: butler.TenantClusterSpec{KubernetesVersion: "v1.31.4", Workers: butler.WorkersSpec{Replicas: workers,
			MachineTemplate: butler.MachineTemplate{CPU: ptr.To[int32](2), Memory: ptr.To(resource.MustParse("8Gi")), DiskSize: ptr.To(resource.MustParse("50Gi"))}}},
	}
}

func TestEffectiveLimitsFieldByField(t *testing.T) {
	config := &butler.ButlerConfig{Spec: butler.ButlerConfigSpec{DefaultTeamLimits: &butler.ResourceLimits{
		MaxClusters: ptr.To[int32](10), MaxTotalCPU: ptr.To(resource.MustParse("100")), DeniedAddons: []string{"traefik"}}}}
	team := &butler.Team{Spec: butler.TeamSpec{ResourceLimits: &butler.ResourceLimits{MaxClusters: ptr.To[int32](3)}}}
	got := EffectiveLimits(team, config)
	if *got.MaxClusters != 3 || got.MaxTotalCPU.String() != "100" || got.DeniedAddons[0] != "traefik" {
		t.Errorf("got %+v", got)
	}
	if got := EffectiveLimits(&butler.Team{}, nil); HasAggregate(got) {
		t.Errorf("no limits anywhere: %+v", got)
	}
}

func TestCheckAggregate(t *testing.T) {
	limits := &butler.ResourceLimits{MaxClusters: ptr.To[int32](3), MaxTotalWorkers: ptr.To[int32](10), MaxTotalMemory: ptr.To(resource.MustParse("64Gi"))}
	one := ClusterUsage(cluster("a", "x", 3)) // 3 workers, 24Gi
	tests := []struct {
		name            string
		others, old, nw Usage
		want            []string
	}{
		{"fits", one.Add(one), Usage{}, ClusterUsage(cluster("a", "y", 1)), nil},
		{"fourth cluster", one.Add(one).Add(ClusterUsage(cluster("a", "z", 0))), Usage{}, ClusterUsage(cluster("a", "y", 0)),
			[]string{`team "t"`, "maxClusters is 3, in use 3, requested 1 (would be 4)"}},
		{"scale past workers and memory", one.Add(one), one, ClusterUsage(cluster("a", "x", 5)),
			[]string{"maxTotalWorkers is 10, in use 9, requested 2 (would be 11)", "maxTotalMemory is 64Gi, in use 72Gi, requested 16Gi (would be 88Gi)"}},
		{"shrinking is always allowed", one.Add(one).Add(one).Add(one), one, ClusterUsage(cluster("a", "x", 1)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAggregate("t", limits, tt.others, tt.old, tt.nw)
			if (err == nil) != (tt.want == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

func TestCheckCluster(t *testing.T) {
	limits := &butler.ResourceLimits{MaxWorkersPerCluster: ptr.To[int32](5), AllowedKubernetesVersions: []string{"v1.31", "v1.32.1"},
		AllowedProviders: []string{"harvester"}, DeniedAddons: []string{"traefik"}}
	ok := cluster("a", "x", 3)
	ok.Spec.ProviderConfigRef = &butler.NamespacedObjectReference{Name: "hv"}
	if err := CheckCluster("t", limits, ok, nil, "harvester"); err != nil {
		t.Errorf("allowed cluster refused: %v", err)
	}
	bad := ok.DeepCopy()
	bad.Spec.Workers.Replicas = 6
	bad.Spec.KubernetesVersion = "v1.30.9"
	bad.Spec.Addons.Ingress = &butler.IngressAddon{Provider: "traefik"}
	err := CheckCluster("t", limits, bad, nil, "nutanix")
	for _, w := range []string{"maxWorkersPerCluster is 5, requested 6", "allowedKubernetesVersions are [v1.31, v1.32.1], requested v1.30.9",
		"allowedProviders are [harvester], requested hv (provider nutanix)", "addon traefik is in deniedAddons"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%v does not say %q", err, w)
		}
	}
	// An update checks only what it changes: a label edit of a cluster made before the limits passes.
	if err := CheckCluster("t", limits, bad, bad, "nutanix"); err != nil {
		t.Errorf("unchanged update refused: %v", err)
	}
	if !VersionAllowed("v1.31.4", []string{"1.31.x"}) || VersionAllowed("v1.310.0", []string{"v1.31"}) {
		t.Error("VersionAllowed")
	}
}

func TestStatus(t *testing.T) {
	limits := &butler.ResourceLimits{MaxClusters: ptr.To[int32](5)}
	for _, tt := range []struct {
		clusters int64
		want     string
	}{{1, StatusOK}, {4, StatusWarning}, {5, StatusWarning}, {6, StatusExceeded}} {
		if got, msg := Status(limits, Usage{Clusters: tt.clusters}); got != tt.want {
			t.Errorf("%d clusters: %s (%s), want %s", tt.clusters, got, msg, tt.want)
		}
	}
}

// memStore is an in-memory Store with a compare-and-swap on the Team, as etcd gives.
type memStore struct {
	mu       sync.Mutex
	team     *butler.Team
	rv       int
	clusters map[string]*butler.TenantCluster
	casFails atomic.Int64
	provider *butler.ProviderConfig // held under the same rv as the team
}

func newMemStore(limits *butler.ResourceLimits) *memStore {
	return &memStore{
		team:     &butler.Team{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Spec: butler.TeamSpec{ResourceLimits: limits}},
		clusters: map[string]*butler.TenantCluster{},
	}
}

func (s *memStore) Team(context.Context, string) (*butler.Team, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.team.DeepCopy(), nil
}
func (s *memStore) Config(context.Context) (*butler.ButlerConfig, error) { return nil, nil }
func (s *memStore) Cluster(_ context.Context, ns, name string) (*butler.TenantCluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tc, ok := s.clusters[ns+"/"+name]; ok {
		return tc.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(butler.Resource("tenantclusters"), name)
}
func (s *memStore) Clusters(_ context.Context, ns, _ string) ([]butler.TenantCluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []butler.TenantCluster
	for _, tc := range s.clusters {
		if tc.Namespace == ns {
			out = append(out, *tc.DeepCopy())
		}
	}
	return out, nil
}
func (s *memStore) ProviderConfig(context.Context, string, string) (*butler.ProviderConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.provider == nil {
		return nil, nil
	}
	return s.provider.DeepCopy(), nil
}
func (s *memStore) AddonDefinitions(context.Context) ([]butler.AddonDefinition, error) {
	return nil, nil
}
func (s *memStore) Snapshots(context.Context, string) ([]butler.TenantClusterSnapshot, error) {
	return nil, nil
}
func (s *memStore) Snapshot(context.Context, string, string) (*butler.TenantClusterSnapshot, error) {
	return nil, nil
}
func (s *memStore) UpdateStrategy(context.Context, string, string) (*butler.UpdateStrategy, error) {
	return nil, nil
}
func (s *memStore) ManagementAddons(context.Context) ([]butler.ManagementAddon, error) {
	return nil, nil
}
func (s *memStore) UpdateTeam(_ context.Context, _ string, update func(*butler.Team) error) error {
	return s.casAny(func() (any, func(any)) {
		return s.team.DeepCopy(), func(v any) { s.team = v.(*butler.Team) }
	}, func(v any) error { return update(v.(*butler.Team)) })
}

func (s *memStore) UpdateProvider(_ context.Context, _, _ string, update func(*butler.ProviderConfig) error) error {
	return s.casAny(func() (any, func(any)) {
		return s.provider.DeepCopy(), func(v any) { s.provider = v.(*butler.ProviderConfig) }
	}, func(v any) error { return update(v.(*butler.ProviderConfig)) })
}

// casAny is a compare-and-swap over the store's rv, as etcd gives: read a copy, update it
// unlocked, write it back only if nothing was written in between, else retry.
func (s *memStore) casAny(read func() (any, func(any)), update func(any) error) error {
	for {
		s.mu.Lock()
		obj, write := read()
		rv := s.rv
		s.mu.Unlock()
		time.Sleep(time.Microsecond) // let others interleave between the read and the write
		if err := update(obj); err != nil {
			return err
		}
		s.mu.Lock()
		if s.rv == rv {
			write(obj)
			s.rv++
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
		s.casFails.Add(1)
	}
}

// create admits and stores a cluster, as the registry does: admission, then the write.
func (s *memStore) create(l *Ledger, tc *butler.TenantCluster, limits *butler.ResourceLimits) error {
	err := l.Admit(context.Background(), Request{Team: "t", Limits: limits, Namespace: tc.Namespace, Name: tc.Name,
		UID: string(tc.UID), New: ClusterUsage(tc)})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clusters[tc.Namespace+"/"+tc.Name]; ok {
		return apierrors.NewAlreadyExists(butler.Resource("tenantclusters"), tc.Name)
	}
	s.clusters[tc.Namespace+"/"+tc.Name] = tc
	return nil
}

func TestLedgerConcurrentCreatesNeverPassTheLimit(t *testing.T) {
	for _, max := range []int32{1, 3} {
		t.Run(fmt.Sprint("maxClusters=", max), func(t *testing.T) {
			limits := &butler.ResourceLimits{MaxClusters: ptr.To(max)}
			s := newMemStore(limits)
			l := &Ledger{Store: s}
			var wg sync.WaitGroup
			var ok, forbidden atomic.Int32
			for i := range 64 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					switch err := s.create(l, cluster("t", fmt.Sprint("c", i), 1), limits); {
					case err == nil:
						ok.Add(1)
					case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "maxClusters"):
						forbidden.Add(1)
					default:
						t.Errorf("unexpected error: %v", err)
					}
				}()
			}
			wg.Wait()
			if ok.Load() != max || len(s.clusters) != int(max) {
				t.Fatalf("%d creates succeeded, %d clusters stored; want %d (forbidden %d, CAS retries %d)",
					ok.Load(), len(s.clusters), max, forbidden.Load(), s.casFails.Load())
			}
			// Every reservation is resolved now: the next one prunes them all.
			if live := Live(Reservations(s.team), mustList(s), time.Now()); len(live) != 0 {
				t.Errorf("live reservations after all creates are stored: %v", live)
			}
		})
	}
}

func mustList(s *memStore) []butler.TenantCluster {
	l, _ := s.Clusters(context.Background(), "t", "")
	return l
}

func TestLedgerReservationLifecycle(t *testing.T) {
	limits := &butler.ResourceLimits{MaxClusters: ptr.To[int32](1)}
	s := newMemStore(limits)
	now := time.Now()
	l := &Ledger{Store: s, Now: func() time.Time { return now }}
	ctx := context.Background()

	// A create admitted but never stored holds the capacity until its reservation expires.
	lost := cluster("t", "lost", 1)
	if err := l.Admit(ctx, Request{Team: "t", Limits: limits, Namespace: "t", Name: "lost", UID: string(lost.UID), New: ClusterUsage(lost)}); err != nil {
		t.Fatal(err)
	}
	if err := s.create(l, cluster("t", "next", 1), limits); !apierrors.IsForbidden(err) {
		t.Fatalf("while the reservation lives: %v", err)
	}
	// The same name again (a retry of the same create) does not count twice.
	if err := s.create(l, lost, limits); err != nil {
		t.Fatalf("retrying the reserved create: %v", err)
	}
	if err := s.create(l, cluster("t", "next", 1), limits); !apierrors.IsForbidden(err) {
		t.Fatalf("over the limit with the stored cluster: %v", err)
	}
	delete(s.clusters, "t/lost")
	now = now.Add(ReservationTTL + time.Second)
	if err := s.create(l, cluster("t", "next", 1), limits); err != nil {
		t.Fatalf("after the cluster was deleted: %v", err)
	}

	// A dry run checks and reserves nothing.
	rv := s.rv
	err := l.Admit(ctx, Request{Team: "t", Limits: limits, Namespace: "t", Name: "dry", UID: "dry", New: ClusterUsage(cluster("t", "dry", 1)), DryRun: true})
	if !apierrors.IsForbidden(err) || s.rv != rv {
		t.Errorf("dry run: err=%v, team written: %v", err, s.rv != rv)
	}
}

func TestLedgerConcurrentScalesOfOneCluster(t *testing.T) {
	limits := &butler.ResourceLimits{MaxTotalWorkers: ptr.To[int32](10)}
	s := newMemStore(limits)
	l := &Ledger{Store: s}
	s.clusters["t/a"] = cluster("t", "a", 2)
	s.clusters["t/b"] = cluster("t", "b", 2)
	// Two scale-ups of different clusters, each fitting alone (+5), not together (+10 > 6 free).
	var wg sync.WaitGroup
	var ok atomic.Int32
	for _, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			old := s.clusters["t/"+name]
			err := l.Admit(context.Background(), Request{Team: "t", Limits: limits, Namespace: "t", Name: name,
				BaseRV: old.ResourceVersion, Old: ClusterUsage(old), New: ClusterUsageWithWorkers(old, 7)})
			if err == nil {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 {
		t.Errorf("%d of two scale-ups that only fit alone were admitted", ok.Load())
	}
}

// Admission may have read the Team before its limits were lowered: the compare-and-swap checks
// the limits of the Team it swaps, not the ones in the request.
func TestLedgerChecksTheLimitsOfTheTeamItSwaps(t *testing.T) {
	s := newMemStore(&butler.ResourceLimits{MaxClusters: ptr.To[int32](1)})
	s.clusters["t/a"] = cluster("t", "a", 1)
	read := &butler.ResourceLimits{MaxClusters: ptr.To[int32](5)}
	b := cluster("t", "b", 1)
	err := (&Ledger{Store: s}).Admit(context.Background(), Request{Team: "t", Limits: read, Namespace: "t", Name: "b",
		UID: string(b.UID), New: ClusterUsage(b)})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "maxClusters") {
		t.Fatalf("a second cluster under the Team's maxClusters 1, admitted with a stale read of 5: %v", err)
	}
}

// The same load against a check without the compare-and-swap (read usage, check, write, as an
// admission plugin over a cache does) passes the limit: the test above would see it.
func TestNaiveCheckPassesTheLimit(t *testing.T) {
	limits := &butler.ResourceLimits{MaxClusters: ptr.To[int32](1)}
	s := newMemStore(limits)
	var wg sync.WaitGroup
	var ok atomic.Int32
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tc := cluster("t", fmt.Sprint("c", i), 1)
			clusters, _ := s.Clusters(context.Background(), "t", "")
			var used Usage
			for j := range clusters {
				used = used.Add(ClusterUsage(&clusters[j]))
			}
			if CheckAggregate("t", limits, used, Usage{}, ClusterUsage(tc)) != nil {
				return
			}
			time.Sleep(2 * time.Millisecond) // the time a request takes from admission to storage
			s.mu.Lock()
			s.clusters["t/"+tc.Name] = tc
			s.mu.Unlock()
			ok.Add(1)
		}()
	}
	wg.Wait()
	if ok.Load() <= 1 {
		t.Skipf("the naive check happened to hold (%d created); the race did not show this time", ok.Load())
	}
	t.Logf("without the Ledger, %d of 64 concurrent creates passed maxClusters 1", ok.Load())
}

// What each attempt of the Ledger's compare-and-swap computes over a Team's clusters, for a
// Team of 1,000 clusters with 16 requests in flight.
func BenchmarkLedgerCheck1000(b *testing.B) {
	clusters := make([]butler.TenantCluster, 1000)
	for i := range clusters {
		clusters[i] = *cluster("t", fmt.Sprint("c", i), 3)
	}
	var rs []Reservation
	for i := range 16 {
		rs = append(rs, Reservation{Key: fmt.Sprint("t/new", i), UID: fmt.Sprint("uid", i), Usage: ClusterUsage(cluster("t", "x", 3)),
			Expires: time.Now().Add(time.Minute).Unix()})
	}
	req := Request{Team: "t", Namespace: "t", Name: "new0", UID: "uid0", New: ClusterUsage(cluster("t", "new0", 3))}
	limits := &butler.ResourceLimits{MaxClusters: ptr.To[int32](5000)}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		live := Live(rs, clusters, now)
		others, old, new := Split(live, clusters, req)
		if err := CheckAggregate("t", limits, others, old, new); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSplit(t *testing.T) {
	w := func(n int32) Usage { return ClusterUsage(cluster("t", "x", n)) }
	clusters := []butler.TenantCluster{*cluster("t", "a", 2), *cluster("t", "b", 2), *cluster("t", "own", 1)}
	live := []Reservation{
		{Key: "t/b", BaseRV: "1", Usage: w(5)}, // b scaling up: counts as 5
		{Key: "t/b", BaseRV: "1", Usage: w(4)}, // a smaller one of the same cluster: no more
		{Key: "t/c", UID: "c", Usage: w(3)},    // c created, not stored yet
		{Key: "t/own", BaseRV: "1", Usage: w(6)},
	}
	req := Request{Namespace: "t", Name: "own", BaseRV: "1", Old: w(1), New: w(4)}
	others, old, new := Split(live, clusters, req)
	if want := w(2).Add(w(5)).Add(w(3)); others != want {
		t.Errorf("others %+v, want %+v (a stored, b reserved, c reserved)", others, want)
	}
	if old != w(6) || new != w(6) {
		t.Errorf("old %+v new %+v, want both at the pending reservation %+v", old, new, w(6))
	}
}

// A cluster created and deleted before any other change saw it stored: its reservation would
// hold the share until it expired, unless the delete resolves it.
func TestResolveCreateOnDelete(t *testing.T) {
	limits := &butler.ResourceLimits{MaxClusters: ptr.To[int32](1)}
	s := newMemStore(limits)
	l := &Ledger{Store: s}
	first := cluster("t", "first", 1)
	if err := s.create(l, first, limits); err != nil {
		t.Fatal(err)
	}
	delete(s.clusters, "t/first")
	if err := s.create(l, cluster("t", "second", 1), limits); !apierrors.IsForbidden(err) {
		t.Fatalf("without resolving, the deleted cluster's reservation should still count: %v", err)
	}
	if err := l.ResolveCreate(context.Background(), "t", string(first.UID)); err != nil {
		t.Fatal(err)
	}
	if live := Reservations(s.team); len(live) != 0 {
		t.Errorf("reservations left: %v", live)
	}
	if err := s.create(l, cluster("t", "second", 1), limits); err != nil {
		t.Fatalf("after the delete resolved it: %v", err)
	}
}
