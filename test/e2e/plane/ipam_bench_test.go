package plane

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// BenchmarkAllocationRateVsServiceClusterIPs (P3 of docs/performance.md) measures single
// addresses allocated per second by 32 concurrent clients (networkpools/allocate) against
// Services of type ClusterIP created per second by 32 concurrent clients (each allocates one
// ClusterIP), both through the plane's kube-apiserver onto its etcd: the allocations are
// aggregated to the plane's butler-apiserver, so both sides take the same path to their
// allocator. b.N operations of each side are split into P3_PAIRS pairs (default 3), the side
// going first alternating; it reports the median of the pairs' ratios, and with
// P3_PAIRS_OUT=<file> writes each pair (allocations/s, ClusterIPs/s, allocations first) for
// bench-report.
//
//	go test -run '^$' -bench AllocationRate -benchtime 3000x ./test/e2e/
func BenchmarkAllocationRateVsServiceClusterIPs(b *testing.B) {
	const clients = 32
	pairs := 3
	if v, err := strconv.Atoi(os.Getenv("P3_PAIRS")); err == nil && v > 0 {
		pairs = v
	}
	config := rest.CopyConfig(framework.Plane.Config)
	config.QPS, config.Burst = 5000, 5000
	kube := kubernetes.NewForConfigOrDie(config)
	butler := clientset.NewForConfigOrDie(config)
	ns := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) }()
	framework.CreateTestPool(b, butler, ns, "bench", "10.80.0.0/16")

	// run does ops [from, to) from clients goroutines and says how many per second.
	run := func(from, to int, op func(i int) error) (perSecond float64) {
		var next, failed int64 = int64(from) - 1, 0
		start := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for {
					i := int(atomic.AddInt64(&next, 1))
					if i >= to {
						return
					}
					if err := op(i); err != nil {
						atomic.AddInt64(&failed, 1)
					}
				}
			})
		}
		wg.Wait()
		if failed > 0 {
			b.Fatalf("%d of %d failed", failed, to-from)
		}
		return float64(to-from) / time.Since(start).Seconds()
	}
	allocate := func(i int) error {
		_, err := butler.ButlerV1alpha1().NetworkPools(ns).Allocate(context.Background(), "bench",
			&v1alpha1.IPAllocation{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("a%d", i)},
				Spec: v1alpha1.IPAllocationSpec{Type: "nodes", Count: ptr.To[int32](1)}}, metav1.CreateOptions{})
		return err
	}
	service := func(i int) error {
		_, err := kube.CoreV1().Services(ns).Create(context.Background(), &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i)},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
				Ports: []corev1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{})
		return err
	}

	b.ResetTimer()
	var ratios []float64
	var lines strings.Builder
	per := max(1, b.N/pairs)
	for k := range pairs {
		from, to := k*per, (k+1)*per
		var allocations, services float64
		allocationsFirst := k%2 == 1 // as bench-report's pairs: the baseline first in the first pair
		if allocationsFirst {
			allocations = run(from, to, allocate)
			services = run(from, to, service)
		} else {
			services = run(from, to, service)
			allocations = run(from, to, allocate)
		}
		ratios = append(ratios, allocations/services)
		fmt.Fprintf(&lines, "%f\t%f\t%t\n", allocations, services, allocationsFirst)
		b.Logf("P3 pair %d: %.1f allocations/s, %.1f ClusterIPs/s (%.2f), allocations first: %t", k+1, allocations, services, allocations/services, allocationsFirst)
	}
	b.StopTimer()
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
	b.ReportMetric(ratios[0], "least-ratio")
	b.ReportMetric(ratios[len(ratios)-1], "greatest-ratio")
	b.ReportMetric(0, "ns/op")
	if out := os.Getenv("P3_PAIRS_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(lines.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
