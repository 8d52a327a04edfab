package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
)

// replicas is an etcd and butler-apiserver processes on it, standalone, as two replicas of
// one deployment would share an etcd.
type replicas struct {
	dir     string
	etcdURL string
	etcd    *exec.Cmd
	servers []*exec.Cmd
	configs []*rest.Config
	clients []clientset.Interface
}

// freePort is a loopback port outside the kernel's ephemeral range (package localports).
func freePort(t testing.TB) int {
	port, err := localports.Free()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// startReplicas starts an etcd and n replicas on it, each with the extra flags.
func startReplicas(t testing.TB, n int, flags ...string) *replicas {
	t.Helper()
	root, _ := filepath.Abs("../..")
	bin := filepath.Join(root, "_output", "bin")
	r := &replicas{dir: t.TempDir()}
	client, peer := freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	r.etcdURL = etcdURL
	r.etcd = exec.Command(filepath.Join(bin, "etcd"), "--name", "ipam", "--data-dir", filepath.Join(r.dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-cluster", fmt.Sprintf("ipam=http://127.0.0.1:%d", peer), "--log-level", "error")
	if err := r.etcd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.stop)
	for i := 0; i < n; i++ {
		dir := filepath.Join(r.dir, fmt.Sprintf("replica-%d", i))
		logFile, err := os.Create(dir + ".log")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(bin, "butler-apiserver"), "--standalone", "--data-dir", dir,
			"--etcd-servers", etcdURL, "--secure-port", fmt.Sprint(freePort(t)),
			"--ipam-repair-interval", "1s", "--ipam-repair-grace", "2s")
		cmd.Args = append(cmd.Args, flags...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.servers = append(r.servers, cmd)
		kubeconfig := filepath.Join(dir, "admin.kubeconfig")
		var config *rest.Config
		err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			if _, err := os.Stat(kubeconfig); err != nil {
				return false, nil
			}
			config, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return false, nil
			}
			config.QPS, config.Burst = 5000, 5000
			c := clientset.NewForConfigOrDie(config)
			_, err = c.ButlerV1alpha1().NetworkPools("default").List(ctx, metav1.ListOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("replica %d did not serve: %v", i, err)
		}
		r.configs = append(r.configs, config)
		r.clients = append(r.clients, clientset.NewForConfigOrDie(config))
	}
	return r
}

func (r *replicas) stop() {
	for _, s := range r.servers {
		if s.ProcessState == nil {
			_ = s.Process.Kill()
			_ = s.Wait()
		}
	}
	if r.etcd.ProcessState == nil {
		_ = r.etcd.Process.Kill()
		_ = r.etcd.Wait()
	}
}

// kill stops replica i at once, mid-request, as a crash would.
func (r *replicas) kill(i int) {
	_ = r.servers[i].Process.Kill()
	_ = r.servers[i].Wait()
}

// rerun starts cmd's command line again, its output appended to the same log, as a
// supervisor restarts a crashed process.
func rerun(cmd *exec.Cmd) (*exec.Cmd, error) {
	again := exec.Command(cmd.Path, cmd.Args[1:]...)
	again.Stdout, again.Stderr = cmd.Stdout, cmd.Stderr
	return again, again.Start()
}

// restart starts replica i again after kill; its clients reach it at the same port.
func (r *replicas) restart(t testing.TB, i int) {
	again, err := rerun(r.servers[i])
	if err != nil {
		t.Errorf("restarting replica %d: %v", i, err)
		return
	}
	r.servers[i] = again
}

func createTestPool(t testing.TB, c clientset.Interface, ns, name, cidr string) {
	t.Helper()
	_, err := c.ButlerV1alpha1().NetworkPools(ns).Create(context.Background(), &v1alpha1.NetworkPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NetworkPoolSpec{CIDR: cidr},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// allocationLoad runs clients goroutines, each making allocations of 1..4 addresses through
// the replicas in turn, half through networkpools/allocate and half as plain creates, and
// deleting every third. It returns how many were stored.
func allocationLoad(ctx context.Context, r *replicas, ns, pool string, clients, perClient int) (created, failed int64) {
	var wg sync.WaitGroup
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < perClient && ctx.Err() == nil; i++ {
				c := r.clients[(g+i)%len(r.clients)].ButlerV1alpha1()
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

// checkInvariants lists every IPAllocation of the pool and checks that no address is held
// twice and that the pool's status adds up to what they hold.
func checkInvariants(t *testing.T, c clientset.Interface, ns, pool string) {
	t.Helper()
	ctx := context.Background()
	list, err := c.ButlerV1alpha1().IPAllocations(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.poolRef.name=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	type held struct {
		name        string
		first, last netip.Addr
	}
	var all []held
	var sum int64
	for _, a := range list.Items {
		if a.Status.Phase != v1alpha1.IPAllocationAllocated {
			t.Errorf("%s is stored but %q", a.Name, a.Status.Phase)
			continue
		}
		first, last := netip.MustParseAddr(a.Status.StartAddress), netip.MustParseAddr(a.Status.EndAddress)
		all = append(all, held{a.Name, first, last})
		sum += a.Status.AllocatedCount
	}
	sort.Slice(all, func(i, j int) bool { return all[i].first.Less(all[j].first) })
	for i := 1; i < len(all); i++ {
		if !all[i-1].last.Less(all[i].first) {
			t.Errorf("%s (%s-%s) and %s (%s-%s) overlap", all[i-1].name, all[i-1].first, all[i-1].last, all[i].name, all[i].first, all[i].last)
		}
	}
	np, err := c.ButlerV1alpha1().NetworkPools(ns).Get(ctx, pool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if np.Status.AllocatedIPs != sum || int(np.Status.AllocationCount) != len(all) ||
		np.Status.AllocatedIPs+np.Status.AvailableIPs != np.Status.TotalIPs {
		t.Errorf("pool status %+v does not add up: %d IPAllocations hold %d addresses", np.Status, len(all), sum)
	}
}

func TestIPAMConcurrentReplicas(t *testing.T) {
	r := startReplicas(t, 2)
	createTestPool(t, r.clients[0], "default", "pool-a", "10.60.0.0/20")
	created, failed := allocationLoad(context.Background(), r, "default", "pool-a", 64, 10)
	if failed > 0 || created != 640 {
		t.Errorf("64 clients × 10 allocations: %d stored, %d failed", created, failed)
	}
	checkInvariants(t, r.clients[0], "default", "pool-a")
	checkInvariants(t, r.clients[1], "default", "pool-a")

	// Exhaustion names the count and the largest free block; a pool with live
	// allocations cannot be deleted.
	createTestPool(t, r.clients[0], "default", "tiny", "10.61.0.0/29") // 6 addresses
	c := r.clients[1].ButlerV1alpha1()
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
	r := startReplicas(t, 2)
	createTestPool(t, r.clients[0], "default", "pool-b", "10.62.0.0/20")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		allocationLoad(ctx, r, "default", "pool-b", 32, 20)
	}()
	time.Sleep(700 * time.Millisecond)
	r.kill(1)
	<-done
	// Whatever replica 1 was committing when it died either committed whole or not at all.
	checkInvariants(t, r.clients[0], "default", "pool-b")

	// The survivor's repair loop finds nothing to free: no reservation outlives its object.
	time.Sleep(3500 * time.Millisecond)
	checkInvariants(t, r.clients[0], "default", "pool-b")
	log, _ := os.ReadFile(filepath.Join(r.dir, "replica-0.log"))
	if strings.Contains(string(log), "IPAM repair freed") || strings.Contains(string(log), "could be handed out again") {
		t.Errorf("the repair loop found broken state after the crash:\n%s", log)
	}
}
