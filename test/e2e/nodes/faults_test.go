package nodes

// The fault battery (make test-faults; docs/development/testing.md): real processes on loopback, a
// bounded load, faults injected with SIGKILL. Each test logs what it held and injected.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// ackedAllocation is what a client was told an allocation holds.
type ackedAllocation struct {
	first, last string
	count       int64
}

// r1Ledger is what the clients were told: stored allocations, and those whose release
// was acknowledged.
type r1Ledger struct {
	mu        sync.Mutex
	held      map[string]ackedAllocation
	released  map[string]bool
	addresses int64 // addresses acknowledged, released or not
	retries   int64 // requests that failed (a replica down) and were retried on the other
}

// retried calls do on each replica in turn until it returns an answer the server gave
// (nil or an API status other than a 5xx), or ctx ends. It says whether an earlier try
// failed without an answer, so a later AlreadyExists or NotFound may be its own doing.
func (l *r1Ledger) retried(ctx context.Context, r *framework.Replicas, first int, do func(ctx context.Context, c clientset.Interface) error) (bool, error) {
	ambiguous := false
	for try := 0; ; try++ {
		reqCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := do(reqCtx, r.Clients[(first+try)%len(r.Clients)])
		cancel()
		var status apierrors.APIStatus
		if err == nil || (errors.As(err, &status) && status.Status().Code < 500) {
			return ambiguous, err
		}
		ambiguous = true
		atomic.AddInt64(&l.retries, 1)
		if ctx.Err() != nil {
			return ambiguous, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFaultAllocationsSurviveReplicaKills (R1): 64 clients allocate 10,000 addresses through
// two butler-apiserver replicas on one etcd and release every third allocation, while one
// replica is killed with SIGKILL every 2 s (alternating) and started again. Clients retry on
// the other replica, as a Service would send them there. Afterwards: no address is held
// twice, every acknowledged allocation is stored with the addresses it was told, every
// acknowledged release is gone, the pool's status equals a recount, and the repair loop
// freed nothing until a leak was made on purpose (IPAllocations deleted straight from
// etcd), which it then frees within its grace period.
func TestFaultAllocationsSurviveReplicaKills(t *testing.T) {
	const (
		clients = 64
		target  = 10000 // addresses allocated in all
		pool    = "r1"
		ns      = "default"
	)
	r := framework.StartReplicas(t, 2)
	framework.CreateTestPool(t, r.Clients[0], ns, pool, "10.70.0.0/18") // 16,382 addresses
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The killer: every 2 s one replica, alternating, SIGKILLed and started again.
	loadDone := make(chan struct{})
	var kills int
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-loadDone:
				return
			case <-tick.C:
			}
			i := kills % 2
			r.Kill(i)
			r.Restart(t, i)
			kills++
		}
	}()

	l := &r1Ledger{held: map[string]ackedAllocation{}, released: map[string]bool{}}
	// Paced at 150 allocations/s, so the load spans about 25 s and a dozen kills (unpaced it
	// is over in 5 s).
	pace := rate.NewLimiter(150, 1)
	started := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && atomic.LoadInt64(&l.addresses) < target; i++ {
				if err := pace.Wait(ctx); err != nil {
					return
				}
				name := fmt.Sprintf("r1-%d-%d", g, i)
				alloc := &v1alpha1.IPAllocation{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec:       v1alpha1.IPAllocationSpec{PoolRef: v1alpha1.LocalObjectReference{Name: pool}, Type: "nodes", Count: ptr.To(int32(1 + (g+i)%4))},
				}
				var got *v1alpha1.IPAllocation
				ambiguous, err := l.retried(ctx, r, g+i, func(ctx context.Context, c clientset.Interface) error {
					var err error
					if i%2 == 0 {
						got, err = c.ButlerV1alpha1().NetworkPools(ns).Allocate(ctx, pool, alloc, metav1.CreateOptions{})
					} else {
						got, err = c.ButlerV1alpha1().IPAllocations(ns).Create(ctx, alloc, metav1.CreateOptions{})
					}
					return err
				})
				if ambiguous && apierrors.IsAlreadyExists(err) {
					// An earlier try committed before its replica died: read what it holds.
					_, err = l.retried(ctx, r, g+i, func(ctx context.Context, c clientset.Interface) error {
						var err error
						got, err = c.ButlerV1alpha1().IPAllocations(ns).Get(ctx, name, metav1.GetOptions{})
						return err
					})
				}
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("allocating %s: %v", name, err)
					}
					return
				}
				if got.Status.Phase != v1alpha1.IPAllocationAllocated {
					t.Errorf("%s acknowledged in phase %q", name, got.Status.Phase)
					continue
				}
				l.mu.Lock()
				l.held[name] = ackedAllocation{got.Status.StartAddress, got.Status.EndAddress, got.Status.AllocatedCount}
				l.mu.Unlock()
				atomic.AddInt64(&l.addresses, got.Status.AllocatedCount)
				if i%3 != 2 {
					continue
				}
				ambiguous, err = l.retried(ctx, r, g+i+1, func(ctx context.Context, c clientset.Interface) error {
					return c.ButlerV1alpha1().IPAllocations(ns).Delete(ctx, name, metav1.DeleteOptions{})
				})
				if err != nil && !(ambiguous && apierrors.IsNotFound(err)) {
					if ctx.Err() == nil {
						t.Errorf("releasing %s: %v", name, err)
					}
					return
				}
				l.mu.Lock()
				delete(l.held, name)
				l.released[name] = true
				l.mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	close(loadDone)
	<-killerDone
	elapsed := time.Since(started)
	if ctx.Err() != nil {
		t.Fatalf("the load did not finish in time: %d of %d addresses after %s", l.addresses, target, elapsed)
	}
	t.Logf("R1: %d addresses in %d allocations (%d released) by %d clients in %s; %d replica kills; %d requests retried on the other replica",
		l.addresses, len(l.held)+len(l.released), len(l.released), clients, elapsed.Round(100*time.Millisecond), kills, l.retries)
	if kills < 3 {
		t.Errorf("only %d kills during the load: it did not run under the fault", kills)
	}

	c := waitServing(t, r)
	// Every acknowledged allocation is stored with what the client was told; every
	// acknowledged release is gone; nothing else was stored.
	list, err := c.ButlerV1alpha1().IPAllocations(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "spec.poolRef.name=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]v1alpha1.IPAllocation{}
	for _, a := range list.Items {
		stored[a.Name] = a
	}
	for name, want := range l.held {
		a, ok := stored[name]
		if !ok {
			t.Errorf("acknowledged allocation %s (%s-%s) is lost", name, want.first, want.last)
			continue
		}
		if a.Status.StartAddress != want.first || a.Status.EndAddress != want.last {
			t.Errorf("%s holds %s-%s, the client was told %s-%s", name, a.Status.StartAddress, a.Status.EndAddress, want.first, want.last)
		}
	}
	for name := range l.released {
		if _, ok := stored[name]; ok {
			t.Errorf("released allocation %s is still stored", name)
		}
	}
	if len(stored) != len(l.held) {
		t.Errorf("%d allocations stored, %d acknowledged and not released", len(stored), len(l.held))
	}
	framework.CheckPoolInvariants(t, c, ns, pool)
	for i := range r.Servers {
		if log := replicaLog(t, r, i); strings.Contains(log, "IPAM repair freed") || strings.Contains(log, "could be handed out again") {
			t.Errorf("replica %d's repair loop found broken state after the kills", i)
		}
	}

	// A leak on purpose: three IPAllocations leave etcd without their reservations (as a
	// finalizer removed by hand would). The repair loop frees them after its grace (2 s).
	etcd := etcdClient(t, r)
	keys, err := etcd.Get(context.Background(), "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var leaked []string
	for _, kv := range keys.Kvs {
		if len(leaked) == 3 {
			break
		}
		key := string(kv.Key)
		dir, name := filepath.Split(key)
		if !strings.HasSuffix(dir, "/ipallocations/"+ns+"/") {
			continue
		}
		if _, ok := l.held[name]; !ok {
			t.Fatalf("%s is in etcd, but not acknowledged", key)
		}
		if resp, err := etcd.Delete(context.Background(), key); err != nil || resp.Deleted != 1 {
			t.Fatalf("deleting %s from etcd: %v (%+v)", key, err, resp)
		}
		leaked = append(leaked, name)
	}
	if len(leaked) != 3 {
		t.Fatalf("found %d IPAllocations in etcd", len(leaked))
	}
	leakedAt := time.Now()
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		return poolAddsUp(ctx, c, ns, pool) == nil, nil
	})
	if err != nil {
		t.Errorf("the leak of %v was not freed: %v", leaked, poolAddsUp(context.Background(), c, ns, pool))
	}
	t.Logf("R1: 3 leaked reservations freed %s after the leak (grace 2 s, pass every 1 s)", time.Since(leakedAt).Round(100*time.Millisecond))
	framework.CheckPoolInvariants(t, c, ns, pool)
}

// waitServing waits until both replicas answer and returns the first's client.
func waitServing(t *testing.T, r *framework.Replicas) clientset.Interface {
	t.Helper()
	for i, c := range r.Clients {
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := c.ButlerV1alpha1().NetworkPools("default").List(ctx, metav1.ListOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("replica %d does not serve: %v", i, err)
		}
	}
	return r.Clients[0]
}

// poolAddsUp says whether the pool's status equals a recount of its IPAllocations.
func poolAddsUp(ctx context.Context, c clientset.Interface, ns, pool string) error {
	list, err := c.ButlerV1alpha1().IPAllocations(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.poolRef.name=" + pool})
	if err != nil {
		return err
	}
	var sum int64
	for _, a := range list.Items {
		sum += a.Status.AllocatedCount
	}
	np, err := c.ButlerV1alpha1().NetworkPools(ns).Get(ctx, pool, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if np.Status.AllocatedIPs != sum || int(np.Status.AllocationCount) != len(list.Items) {
		return fmt.Errorf("status says %d addresses in %d allocations, the IPAllocations hold %d in %d",
			np.Status.AllocatedIPs, np.Status.AllocationCount, sum, len(list.Items))
	}
	return nil
}

func replicaLog(t *testing.T, r *framework.Replicas, i int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.Dir, fmt.Sprintf("replica-%d.log", i)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// etcdClient connects to the replicas' etcd.
func etcdClient(t *testing.T, r *framework.Replicas) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{r.EtcdURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// r2Kinds are the kinds R2 creates, from their examples in artifacts/examples, and what each
// example needs changed to be created many times in one namespace with no Team or workers.
var r2Kinds = []struct {
	resource, example string
	namespaced        bool
	edit              func(u *unstructured.Unstructured)
}{
	{"teams", "01-team.yaml", false, nil},
	{"providerconfigs", "02-providerconfig.yaml", true, nil},
	{"networkpools", "03-networkpool.yaml", true, nil},
	// One address each from the pool "lab" that the test creates first.
	{"ipallocations", "04-ipallocation.yaml", true, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(1), "spec", "count")
		unstructured.RemoveNestedField(u.Object, "spec", "tenantClusterRef")
	}},
	{"addondefinitions", "05-addondefinition.yaml", false, nil},
	// Not a Team's: the example's Team would cap it at 3. Its ProviderConfig is the one of its
	// own namespace (a TenantCluster may not use another namespace's unless it is shared).
	{"tenantclusters", "06-tenantcluster.yaml", true, func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, "spec", "teamRef")
		unstructured.RemoveNestedField(u.Object, "spec", "providerConfigRef", "namespace")
	}},
	{"tenantaddons", "07-tenantaddon.yaml", true, nil},
}

// readExample decodes one of artifacts/examples.
func readExample(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "artifacts", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return u
}

// TestFaultEtcdOutage (R2): etcd is killed for 10 s and started again while two
// butler-apiserver replicas take creates of every kind (and updates of the ButlerConfig
// singleton) from 14 clients. During the outage requests fail with 5xx or time out, none
// waits past the server's request timeout, and nothing panics; afterwards both replicas serve
// again without a restart, and every acknowledged object is stored.
func TestFaultEtcdOutage(t *testing.T) {
	const (
		ns             = "r2"
		requestTimeout = 60 * time.Second // the generic apiserver's, which butler-apiserver keeps
		outage         = 10 * time.Second
		settle         = 5 * time.Second // after etcd is back, for the clients to reconnect
	)
	r := framework.StartReplicas(t, 2)
	clients := make([]dynamic.Interface, len(r.Configs))
	for i, config := range r.Configs {
		config = rest.CopyConfig(config)
		config.Timeout = requestTimeout + 15*time.Second // the client gives up only after the server should have
		clients[i] = dynamic.NewForConfigOrDie(config)
	}
	gvr := func(resource string) schema.GroupVersionResource {
		return v1alpha1.SchemeGroupVersion.WithResource(resource)
	}
	ctx := context.Background()
	pool := readExample(t, "03-networkpool.yaml")
	pool.SetNamespace(ns)
	if _, err := clients[0].Resource(gvr("networkpools")).Namespace(ns).Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	butlerConfig := readExample(t, "00-butlerconfig.yaml")
	if _, err := clients[0].Resource(gvr("butlerconfigs")).Create(ctx, butlerConfig, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	type result struct {
		kind, namespace, name string
		err                   error
		took                  time.Duration
		at                    time.Time
	}
	var mu sync.Mutex
	var results []result
	record := func(kind, namespace, name string, started time.Time, err error) {
		mu.Lock()
		defer mu.Unlock()
		results = append(results, result{kind, namespace, name, err, time.Since(started), started})
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Two clients per kind, one on each replica; the ButlerConfig's are updates of a counter.
	for _, k := range r2Kinds {
		namespace := ""
		if k.namespaced {
			namespace = ns
		}
		example := readExample(t, k.example)
		example.SetNamespace(namespace)
		if k.edit != nil {
			k.edit(example)
		}
		for replica := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := clients[replica].Resource(gvr(k.resource)).Namespace(namespace)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					u := example.DeepCopy()
					name := fmt.Sprintf("%s-r%d-%d", example.GetName(), replica, i)
					u.SetName(name)
					started := time.Now()
					_, err := res.Create(ctx, u, metav1.CreateOptions{})
					record(k.resource, namespace, name, started, err)
					time.Sleep(100 * time.Millisecond)
				}
			}()
		}
	}
	var lastAckedSeq atomic.Int64
	for replica := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := clients[replica].Resource(gvr("butlerconfigs"))
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Each replica's client writes its own label, so the two never conflict.
				seq := int64(i)
				patch := fmt.Sprintf(`{"metadata":{"labels":{"r2-seq-%d":"%d"}}}`, replica, seq)
				started := time.Now()
				_, err := res.Patch(ctx, "butler", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				record("butlerconfigs", "", fmt.Sprintf("butler r2-seq-%d=%d", replica, seq), started, err)
				if err == nil && replica == 0 {
					lastAckedSeq.Store(seq)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}

	// Replica 0's /readyz, polled throughout: it should say etcd is down while it is.
	var readyzFailedDuringOutage, readyzOKAfter atomic.Bool
	var outageState atomic.Int32 // 0 before, 1 during, 2 after
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := r.Clients[0].Discovery().RESTClient().Get().AbsPath("/readyz").Do(reqCtx).Error()
			cancel()
			switch state := outageState.Load(); {
			case state == 1 && err != nil:
				readyzFailedDuringOutage.Store(true)
			case state == 2 && err == nil:
				readyzOKAfter.Store(true)
			}
		}
	}()

	time.Sleep(5 * time.Second)
	killedAt := time.Now()
	outageState.Store(1)
	_ = r.Etcd.Process.Kill()
	_ = r.Etcd.Wait()
	time.Sleep(outage)
	again, err := framework.Rerun(r.Etcd)
	if err != nil {
		t.Fatalf("restarting etcd: %v", err)
	}
	r.Etcd = again
	restartedAt := time.Now()
	outageState.Store(2)
	time.Sleep(2 * settle)
	close(stop)
	wg.Wait()

	// Every failure is a 5xx or a timeout and came during the outage or as etcd came back;
	// none took longer than the request timeout (plus a second for the answer to travel).
	// A write in flight during the outage waits for etcd (up to the request timeout), as
	// kube-apiserver's do; it is counted as having felt the outage.
	var acked, failed, felt int
	var slowest time.Duration
	var firstOKAfter time.Time
	codes := map[string]int{}
	for _, res := range results {
		slowest = max(slowest, res.took)
		if end := res.at.Add(res.took); res.at.Before(restartedAt) && end.After(killedAt) && (res.err != nil || res.took > time.Second) {
			felt++
		}
		if res.took > requestTimeout+time.Second {
			t.Errorf("%s %s took %s, past the request timeout", res.kind, res.name, res.took)
		}
		if res.err == nil {
			acked++
			if res.at.After(restartedAt) && (firstOKAfter.IsZero() || res.at.Add(res.took).Before(firstOKAfter)) {
				firstOKAfter = res.at.Add(res.took)
			}
			continue
		}
		failed++
		var status apierrors.APIStatus
		switch {
		case errors.As(res.err, &status) && status.Status().Code >= 500:
			codes[fmt.Sprint(status.Status().Code)]++
			t.Logf("%s %s, %s after etcd stopped: %v", res.kind, res.name, res.at.Sub(killedAt).Round(time.Millisecond), res.err)
		case errors.Is(res.err, context.DeadlineExceeded) || strings.Contains(res.err.Error(), "Client.Timeout"):
			codes["client timeout"]++
		default:
			t.Errorf("%s %s: %v (not a 5xx or a timeout)", res.kind, res.name, res.err)
		}
		if res.at.After(restartedAt.Add(settle)) {
			t.Errorf("%s %s failed %s after etcd was back: %v", res.kind, res.name, res.at.Sub(restartedAt).Round(time.Millisecond), res.err)
		}
	}
	t.Logf("R2: %d requests (%d acknowledged, %d failed: %v); etcd down %s; %d requests waited on it or failed; slowest answer %s; first acknowledged write %s after etcd restarted",
		len(results), acked, failed, codes, restartedAt.Sub(killedAt).Round(100*time.Millisecond), felt, slowest.Round(time.Millisecond),
		firstOKAfter.Sub(restartedAt).Round(time.Millisecond))
	if felt == 0 {
		t.Errorf("no request waited or failed: the outage was not felt")
	}
	if !readyzFailedDuringOutage.Load() || !readyzOKAfter.Load() {
		t.Errorf("replica 0's /readyz: failed during the outage %v, ok after %v", readyzFailedDuringOutage.Load(), readyzOKAfter.Load())
	}

	// The same processes serve: neither replica exited.
	for i, s := range r.Servers {
		if s.ProcessState != nil {
			t.Errorf("replica %d exited: %v", i, s.ProcessState)
		}
		if log := replicaLog(t, r, i); strings.Contains(log, "panic") {
			t.Errorf("replica %d logged a panic", i)
		}
	}
	// Every acknowledged object is stored.
	for _, res := range results {
		if res.err != nil || res.kind == "butlerconfigs" {
			continue
		}
		if _, err := clients[0].Resource(gvr(res.kind)).Namespace(res.namespace).Get(ctx, res.name, metav1.GetOptions{}); err != nil {
			t.Errorf("acknowledged %s %s: %v", res.kind, res.name, err)
		}
	}
	bc, err := clients[1].Resource(gvr("butlerconfigs")).Get(ctx, "butler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	if _, err := fmt.Sscan(bc.GetLabels()["r2-seq-0"], &stored); err != nil {
		t.Errorf("the ButlerConfig's label r2-seq-0: %v", err)
	}
	if stored < lastAckedSeq.Load() {
		t.Errorf("the ButlerConfig's last acknowledged update was %d, it holds %d", lastAckedSeq.Load(), stored)
	}
}

// workersLease is the Lease that elects the replica whose controllers act.
const workersLeaseNamespace, workersLeaseName = "butler-system", "butler-apiserver-workers"

// leaseHolder is the identity that holds the controllers' Lease, or "".
func leaseHolder(ctx context.Context) string {
	lease, err := framework.Plane.Kube.CoordinationV1().Leases(workersLeaseNamespace).Get(ctx, workersLeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// leaderProcess waits until the holder of the controllers' Lease is not one of except, and says
// which of the plane's butler-apiserver processes it is, by the identity its log says it
// started leading as.
func leaderProcess(t *testing.T, replicas []string, except string) (name, identity string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		identity = leaseHolder(ctx)
		if identity == "" || identity == except {
			return false, nil
		}
		name = replicaLeadingAs(t, replicas, identity)
		return name != "", nil // klog flushes the line within seconds
	})
	if err != nil {
		return "", identity
	}
	return name, identity
}

// replicaLeadingAs is the replica whose log says it started leading as identity, or "".
func replicaLeadingAs(t *testing.T, replicas []string, identity string) string {
	t.Helper()
	for _, r := range replicas {
		log, err := os.ReadFile(filepath.Join(framework.Plane.Dir, "logs", r+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(log), `"Leading: starting the workers"`) && strings.Contains(string(log), `identity="`+identity+`"`) {
			return r
		}
	}
	return ""
}

// r4Kinds are the objects a local cluster of one worker has one of each, and leaves none of.
var r4Kinds = []schema.GroupVersionResource{framework.ClustersGVR, framework.StewardCPGVR, framework.TenantCPGVR, framework.MachineDeploymentsGVR, external.MachineGVR}

// TestFaultWorkersLeaderKilled (R4): the plane runs two butler-apiserver replicas
// (BUTLER_APISERVER_REPLICAS=2, as make test-faults sets). 20 local TenantClusters (R4_CLUSTERS:
// CI's stage asks for 10, within its time budget) are applied at once; while they provision, the replica leading the controllers is killed with SIGKILL and
// stays down until the other has taken the Lease (then it is started again, as a Deployment
// would). Every cluster becomes Ready with exactly one Cluster, StewardControlPlane,
// TenantControlPlane, MachineDeployment and Machine, and one process of each control plane
// component. Then they are all deleted at once: no TenantCluster, tenant namespace, CAPI or
// Steward object, IPAllocation, process or etcd key under a tenant's prefix is left.
func TestFaultWorkersLeaderKilled(t *testing.T) {
	clusters := 20
	if n, err := strconv.Atoi(os.Getenv("R4_CLUSTERS")); err == nil && n > 0 {
		clusters = n
	}
	replicas := []string{"butler-apiserver", "butler-apiserver-1"}
	if _, err := os.Stat(filepath.Join(framework.Plane.Dir, "run", replicas[1]+".pid")); err != nil {
		t.Fatalf("this test needs the plane started with BUTLER_APISERVER_REPLICAS=2 (make test-faults): %v", err)
	}
	ctx := context.Background()
	leader, identity := leaderProcess(t, replicas, "")
	if leader == "" {
		t.Fatalf("no replica leads the workers (Lease holder %q)", identity)
	}

	ns := framework.Namespace(t, "e2e-r4")
	// Addresses from a pool (network mode ipam), so deletion must give them back.
	manifest := fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: NetworkPool
metadata: {name: r4, namespace: %[1]s}
spec: {cidr: 10.80.0.0/22}
---
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: local, namespace: %[1]s}
spec:
  provider: local
  network: {mode: ipam, poolRefs: [{name: r4}]}
`, ns)
	names := make([]string, clusters)
	for i := range names {
		names[i] = fmt.Sprintf("r4-%02d", i)
		manifest += "---\n" + framework.LocalClusterManifest(ns, names[i], framework.PinnedVersion, bootstrap.OSTalos, 1)
	}
	framework.MustApply(t, manifest)
	created := time.Now()

	// Mid-provisioning: once every cluster has its tenant namespace and before any is Ready.
	readyAtKill := 0
	provisioning := func(ctx context.Context) (bool, error) {
		list, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		started, ready := 0, 0
		for _, tc := range list.Items {
			if tc.Status.TenantNamespace != "" {
				started++
			}
			if tc.Status.Phase == v1alpha1.TenantClusterReady {
				ready++
			}
		}
		readyAtKill = ready
		return started == clusters, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, provisioning); err != nil {
		t.Fatalf("the clusters did not start provisioning: %v", err)
	}
	startAgain := framework.KillPlaneProcess(t, leader)
	killedAt := time.Now()
	newLeader, _ := leaderProcess(t, replicas, identity)
	if newLeader == "" || newLeader == leader {
		startAgain()
		t.Fatalf("no other replica took the workers' Lease within a minute of killing %s", leader)
	}
	tookOver := time.Since(killedAt)
	startAgain()
	t.Logf("R4: %s (leading) killed %s after the create, with %d of %d clusters Ready; %s took the Lease %s later",
		leader, killedAt.Sub(created).Round(100*time.Millisecond), readyAtKill, clusters, newLeader, tookOver.Round(100*time.Millisecond))

	// Every cluster Ready, once, and nothing made twice.
	t.Run("ready", func(t *testing.T) {
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				framework.WaitReady(t, ns, name, 1, 10*time.Minute)
			})
		}
	})
	t.Logf("R4: all %d Ready %s after the create", clusters, time.Since(created).Round(100*time.Millisecond))
	if t.Failed() {
		return
	}
	if pool, err := framework.Plane.Butler.ButlerV1alpha1().NetworkPools(ns).Get(ctx, "r4", metav1.GetOptions{}); err != nil || pool.Status.AllocatedIPs == 0 {
		t.Errorf("pool r4 with %d clusters Ready: %+v (%v)", clusters, pool.Status, err)
	} else {
		t.Logf("R4: the %d clusters hold %d addresses in %d IPAllocations", clusters, pool.Status.AllocatedIPs, pool.Status.AllocationCount)
	}
	d := framework.DynamicClient(t)
	uids := map[string]string{} // tenant namespace -> TenantControlPlane UID
	var etcd *clientv3.Client
	for _, name := range names {
		tc, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tenantNS := tc.Status.TenantNamespace
		for _, r := range r4Kinds {
			list, err := d.Resource(r).Namespace(tenantNS).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 {
				t.Errorf("%s: %s in %s: %d, want 1 (%v)", name, r.Resource, tenantNS, len(list.Items), err)
			}
		}
		tcp, err := d.Resource(framework.TenantCPGVR).Namespace(tenantNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uid := string(tcp.GetUID())
		uids[tenantNS] = uid
		if got := framework.TenantProcesses(t, uid); !maps.Equal(got, framework.OneOfEachComponent) {
			t.Errorf("%s: tenant processes %v, want one of each", name, got)
		}
		if etcd == nil {
			etcd = framework.TenantEtcd(t, framework.TenantPids(t, filepath.Join(framework.Plane.Dir, "tenants", uid))["kube-apiserver"])
		}
	}

	// All 20 deleted at once.
	deleted := time.Now()
	framework.MustKubectl(t, "delete", "tc", "--all", "-n", ns, "--wait=false")
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("the TenantClusters were not gone 10 minutes after the delete")
	}
	t.Logf("R4: all %d deleted %s after the delete", clusters, time.Since(deleted).Round(100*time.Millisecond))
	for tenantNS, uid := range uids {
		if got := framework.TenantProcesses(t, uid); len(got) != 0 {
			t.Errorf("%s: processes left: %v", tenantNS, got)
		}
		if n := framework.EtcdKeys(t, etcd, "/"+uid+"/"); n != 0 {
			t.Errorf("%s: %d etcd keys left under /%s/", tenantNS, n, uid)
		}
		if _, err := framework.Plane.Kube.CoreV1().Namespaces().Get(ctx, tenantNS, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("tenant namespace %s is still there (%v)", tenantNS, err)
		}
	}
	for _, r := range r4Kinds {
		list, err := d.Resource(r).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			if _, ours := uids[o.GetNamespace()]; ours {
				t.Errorf("%s %s/%s is left", r.Resource, o.GetNamespace(), o.GetName())
			}
		}
	}
	if allocs, err := framework.Plane.Butler.ButlerV1alpha1().IPAllocations(ns).List(ctx, metav1.ListOptions{}); err != nil || len(allocs.Items) != 0 {
		t.Errorf("IPAllocations left in %s: %d (%v)", ns, len(allocs.Items), err)
	}
	if pool, err := framework.Plane.Butler.ButlerV1alpha1().NetworkPools(ns).Get(ctx, "r4", metav1.GetOptions{}); err != nil || pool.Status.AllocatedIPs != 0 {
		t.Errorf("pool r4 after the delete: %+v (%v)", pool.Status, err)
	}
}
