package e2e

import (
	"context"
	"fmt"
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
)

// BenchmarkAllocationRateVsServiceClusterIPs measures, in one run on one machine, single
// addresses allocated per second by 32 concurrent clients against two butler-apiserver
// replicas on one etcd, and Services of type ClusterIP created per second by 32 concurrent
// clients against the plane's real kube-apiserver (each allocates one ClusterIP). It reports
// both rates and their ratio. b.N is the number of each.
//
//	go test -run '^$' -bench AllocationRate -benchtime 2000x ./test/e2e/
func BenchmarkAllocationRateVsServiceClusterIPs(b *testing.B) {
	const clients = 32
	r := startReplicas(b, 2)
	createTestPool(b, r.clients[0], "default", "bench", "10.80.0.0/16")

	config := rest.CopyConfig(plane.config)
	config.QPS, config.Burst = 5000, 5000
	kube := kubernetes.NewForConfigOrDie(config)
	ns := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) }()

	run := func(op func(i int) error) (perSecond float64) {
		var next, failed int64 = -1, 0
		start := time.Now()
		var wg sync.WaitGroup
		for g := 0; g < clients; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(atomic.AddInt64(&next, 1))
					if i >= b.N {
						return
					}
					if err := op(i); err != nil {
						atomic.AddInt64(&failed, 1)
					}
				}
			}()
		}
		wg.Wait()
		if failed > 0 {
			b.Fatalf("%d of %d failed", failed, b.N)
		}
		return float64(b.N) / time.Since(start).Seconds()
	}

	b.ResetTimer()
	allocations := run(func(i int) error {
		_, err := r.clients[i%2].ButlerV1alpha1().NetworkPools("default").Allocate(context.Background(), "bench",
			&v1alpha1.IPAllocation{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("a%d", i)},
				Spec: v1alpha1.IPAllocationSpec{Type: "nodes", Count: ptr.To[int32](1)}}, metav1.CreateOptions{})
		return err
	})
	services := run(func(i int) error {
		_, err := kube.CoreV1().Services(ns).Create(context.Background(), &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i)},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
				Ports: []corev1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{})
		return err
	})
	b.StopTimer()
	b.ReportMetric(allocations, "allocations/s")
	b.ReportMetric(services, "clusterIPs/s")
	b.ReportMetric(allocations/services, "ratio")
	b.ReportMetric(0, "ns/op")
}
