package plane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// allocationLoad runs clients goroutines, each making allocations of 1..4 addresses through
// the replicas in turn, half through networkpools/allocate and half as plain creates, and
// deleting every third. It returns how many were stored.
func allocationLoad(ctx context.Context, r *framework.Replicas, ns, pool string, clients, perClient int) (created, failed int64) {
	var wg sync.WaitGroup
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < perClient && ctx.Err() == nil; i++ {
				c := r.Clients[(g+i)%len(r.Clients)].ButlerV1alpha1()
				alloc := &v1alpha1.IPAllocation{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d-%d", g, i)},
					Spec:       v1alpha1.IPAllocationSpec{PoolRef: v1alpha1.LocalObjectReference{Name: pool}, Type: "nodes", Count: ptr.To(int32(1 + (g+i)%4))},
				}
				var err error
				if i%2 == 0 {
					_, err = c.NetworkPools(ns).Allocate(ctx, pool, alloc, metav1.CreateOptions{})
				} else {
					_, err = c.IPAllocations(ns).Create(ctx, alloc, metav1.CreateOptions{})
				}
				if err != nil {
					atomic.AddInt64(&failed, 1)
					continue
				}
				atomic.AddInt64(&created, 1)
				if i%3 == 2 {
					_ = c.IPAllocations(ns).Delete(ctx, alloc.Name, metav1.DeleteOptions{})
				}
			}
		}(g)
	}
	wg.Wait()
	return created, failed
}

func TestIPAMConcurrentReplicas(t *testing.T) {
	r := framework.StartReplicas(t, 2)
	framework.CreateTestPool(t, r.Clients[0], "default", "pool-a", "10.60.0.0/20")
	created, failed := allocationLoad(context.Background(), r, "default", "pool-a", 64, 10)
	if failed > 0 || created != 640 {
		t.Errorf("64 clients × 10 allocations: %d stored, %d failed", created, failed)
	}
	framework.CheckPoolInvariants(t, r.Clients[0], "default", "pool-a")
	framework.CheckPoolInvariants(t, r.Clients[1], "default", "pool-a")

	// Exhaustion names the count and the largest free block; a pool with live
	// allocations cannot be deleted.
	framework.CreateTestPool(t, r.Clients[0], "default", "tiny", "10.61.0.0/29") // 6 addresses
	c := r.Clients[1].ButlerV1alpha1()
	_, err := c.NetworkPools("default").Allocate(context.Background(), "tiny", &v1alpha1.IPAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "too-big"},
		Spec:       v1alpha1.IPAllocationSpec{Type: "nodes", Count: ptr.To(int32(7))}}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "7 contiguous addresses requested, the largest free block holds 6") {
		t.Errorf("exhausted pool: %v", err)
	}
	if _, err := c.IPAllocations("default").Get(context.Background(), "too-big", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused allocation was stored: %v", err)
	}
	err = c.NetworkPools("default").Delete(context.Background(), "pool-a", metav1.DeleteOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "live allocation") {
		t.Errorf("deleting a pool in use: %v", err)
	}
}

func TestIPAMReplicaCrashMidLoad(t *testing.T) {
	r := framework.StartReplicas(t, 2)
	framework.CreateTestPool(t, r.Clients[0], "default", "pool-b", "10.62.0.0/20")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		allocationLoad(ctx, r, "default", "pool-b", 32, 20)
	}()
	time.Sleep(700 * time.Millisecond)
	r.Kill(1)
	<-done
	// Whatever replica 1 was committing when it died either committed whole or not at all.
	framework.CheckPoolInvariants(t, r.Clients[0], "default", "pool-b")

	// The survivor's repair loop finds nothing to free: no reservation outlives its object.
	time.Sleep(3500 * time.Millisecond)
	framework.CheckPoolInvariants(t, r.Clients[0], "default", "pool-b")
	log, _ := os.ReadFile(filepath.Join(r.Dir, "replica-0.log"))
	if strings.Contains(string(log), "IPAM repair freed") || strings.Contains(string(log), "could be handed out again") {
		t.Errorf("the repair loop found broken state after the crash:\n%s", log)
	}
}
