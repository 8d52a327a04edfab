package admission

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
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

var snapResource = butler.Resource("tenantclustersnapshots").WithVersion("v1alpha1")

// A snapshot of a cluster that does not exist is a 422 at admission, not a snapshot that fails
// later; a Team takes snapshots up to its maxSnapshots and while they hold less than its
// maxSnapshotBytes (403 naming the limit), each from the Team's resourceLimits or ButlerConfig's
// defaultTeamLimits.
func TestSnapshotLimits(t *testing.T) {
	s := newStore()
	s.config.Spec.DefaultTeamLimits.MaxSnapshots = ptr.To[int32](3)
	s.teams["team-a"].Spec.ResourceLimits.MaxSnapshotBytes = ptr.To(resource.MustParse("1Mi"))
	s.snapshots = map[string]*butler.TenantClusterSnapshot{}
	take := func(cluster string) error {
		snap := &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "new"},
			Spec: butler.TenantClusterSnapshotSpec{ClusterRef: butler.LocalObjectReference{Name: cluster}}}
		return validate(t, s, attrs(snap, nil, "team-a", "new", snapResource, "", admission.Create, true)) // a dry run reserves nothing
	}
	add := func(name string, bytes int64) {
		s.snapshots["team-a/"+name] = &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name},
			Status: butler.TenantClusterSnapshotStatus{Phase: butler.SnapshotReady, Bytes: bytes}}
	}
	expect(t, take("missing"), apierrors.IsInvalid, `spec.clusterRef.name: Not found: "missing"`)
	expect(t, take("one"), nil, "")
	add("a", 600<<10)
	expect(t, take("one"), nil, "")
	add("b", 600<<10)
	expect(t, take("one"), apierrors.IsForbidden, `team "team-a": its snapshots hold 1200Ki in the snapshot store, at its maxSnapshotBytes of 1Mi`)
	s.teams["team-a"].Spec.ResourceLimits.MaxSnapshotBytes = nil
	expect(t, take("one"), nil, "")
	add("c", 0)
	expect(t, take("one"), apierrors.IsForbidden, `team "team-a" has 3 TenantClusterSnapshots (stored, or admitted and not stored yet), its maxSnapshots is 3`)
	// Another namespace's snapshots do not count.
	delete(s.snapshots, "team-a/c")
	s.snapshots["team-b/x"] = &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "x"}}
	expect(t, take("one"), nil, "")
}

// raceStore is fakeStore made safe for concurrent requests, with a compare-and-swap on the
// Team as etcd gives: UpdateTeam reads a copy, runs update unlocked and writes it back only if
// no other write came in between, else runs it again.
type raceStore struct {
	*fakeStore
	mu sync.Mutex
	rv int
}

func (s *raceStore) Team(ctx context.Context, name string) (*butler.Team, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fakeStore.Team(ctx, name)
}

func (s *raceStore) Snapshots(ctx context.Context, ns string) ([]butler.TenantClusterSnapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fakeStore.Snapshots(ctx, ns)
}

func (s *raceStore) UpdateTeam(_ context.Context, name string, update func(*butler.Team) error) error {
	for {
		s.mu.Lock()
		team, rv := s.teams[name].DeepCopy(), s.rv
		s.mu.Unlock()
		time.Sleep(time.Millisecond) // others interleave between the read and the write
		if err := update(team); err != nil {
			return err
		}
		s.mu.Lock()
		if s.rv == rv {
			s.teams[name], s.rv = team, rv+1
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
	}
}

// store writes an admitted snapshot, as the registry does after admission.
func (s *raceStore) store(snap *butler.TenantClusterSnapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snapshots[snap.Namespace+"/"+snap.Name] = snap
}

// The attack: a Team at maxSnapshots minus one sends 16 creates at once. Each was counted
// against what is stored, so all 16 passed together; now each create is reserved on the Team
// (a compare-and-swap, as cluster counts are), so exactly one passes, and a reservation stops
// counting once its snapshot is stored (or deleted).
func TestSnapshotLimitsHoldUnderConcurrentCreates(t *testing.T) {
	fake := newStore()
	fake.teams["team-a"].Spec.ResourceLimits.MaxSnapshots = ptr.To[int32](3)
	fake.snapshots = map[string]*butler.TenantClusterSnapshot{}
	for _, n := range []string{"a", "b"} {
		fake.snapshots["team-a/"+n] = &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: n, UID: types.UID("uid-" + n)}}
	}
	s := &raceStore{fakeStore: fake}
	p := NewSnapshotLimits()
	p.SetLedger(&quota.Ledger{Store: s})
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprint("race-", i)
			snap := &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID("uid-" + name)},
				Spec: butler.TenantClusterSnapshotSpec{ClusterRef: butler.LocalObjectReference{Name: "one"}}}
			err := p.Validate(context.Background(), attrs(snap, nil, "team-a", name, snapResource, "", admission.Create, false), nil)
			switch {
			case err == nil:
				time.Sleep(5 * time.Millisecond) // the write to storage comes after admission
				s.store(snap)
				ok.Add(1)
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "its maxSnapshots is 3"):
				refused.Add(1)
			default:
				t.Errorf("%s: %v", name, err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || len(fake.snapshots) != 3 {
		t.Fatalf("16 concurrent creates at maxSnapshots 3 with 2 stored: %d admitted, %d refused, %d stored; want 1 admitted", ok.Load(), refused.Load(), len(fake.snapshots))
	}
	// Deleting one makes room for one more, at once: the stored one's reservation no longer counts.
	delete(fake.snapshots, "team-a/a")
	next := &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "next", UID: "uid-next"},
		Spec: butler.TenantClusterSnapshotSpec{ClusterRef: butler.LocalObjectReference{Name: "one"}}}
	expect(t, p.Validate(context.Background(), attrs(next, nil, "team-a", "next", snapResource, "", admission.Create, false), nil), nil, "")
}
