package framework

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
)

// Replicas is an etcd and butler-apiserver processes on it, standalone, as two replicas of
// one deployment would share an etcd.
type Replicas struct {
	Dir     string
	EtcdURL string
	Etcd    *exec.Cmd
	Servers []*exec.Cmd
	Configs []*rest.Config
	Clients []clientset.Interface
}

// freePort is a loopback port outside the kernel's ephemeral range (package localports).
func freePort(t testing.TB) int {
	port, err := localports.Free()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// StartReplicas starts an etcd and n replicas on it, each with the extra flags.
func StartReplicas(t testing.TB, n int, flags ...string) *Replicas {
	t.Helper()
	root, _ := RepoRoot()
	bin := filepath.Join(root, "_output", "bin")
	r := &Replicas{Dir: t.TempDir()}
	client, peer := freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	r.EtcdURL = etcdURL
	r.Etcd = exec.Command(filepath.Join(bin, "etcd"), "--name", "ipam", "--data-dir", filepath.Join(r.Dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-cluster", fmt.Sprintf("ipam=http://127.0.0.1:%d", peer), "--log-level", "error")
	if err := r.Etcd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.stop)
	for i := 0; i < n; i++ {
		dir := filepath.Join(r.Dir, fmt.Sprintf("replica-%d", i))
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
		r.Servers = append(r.Servers, cmd)
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
		r.Configs = append(r.Configs, config)
		r.Clients = append(r.Clients, clientset.NewForConfigOrDie(config))
	}
	return r
}

func (r *Replicas) stop() {
	for _, s := range r.Servers {
		if s.ProcessState == nil {
			_ = s.Process.Kill()
			_ = s.Wait()
		}
	}
	if r.Etcd.ProcessState == nil {
		_ = r.Etcd.Process.Kill()
		_ = r.Etcd.Wait()
	}
}

// KillPlaneProcess stops replica i at once, mid-request, as a crash would.
func (r *Replicas) Kill(i int) {
	_ = r.Servers[i].Process.Kill()
	_ = r.Servers[i].Wait()
}

// Rerun starts cmd's command line again, its output appended to the same log, as a
// supervisor restarts a crashed process.
func Rerun(cmd *exec.Cmd) (*exec.Cmd, error) {
	again := exec.Command(cmd.Path, cmd.Args[1:]...)
	again.Stdout, again.Stderr = cmd.Stdout, cmd.Stderr
	return again, again.Start()
}

// RestartPlaneProcess starts replica i again after kill; its clients reach it at the same port.
func (r *Replicas) Restart(t testing.TB, i int) {
	again, err := Rerun(r.Servers[i])
	if err != nil {
		t.Errorf("restarting replica %d: %v", i, err)
		return
	}
	r.Servers[i] = again
}

// CreateTestPool creates the NetworkPool ns/name of cidr.
func CreateTestPool(t testing.TB, c clientset.Interface, ns, name, cidr string) {
	t.Helper()
	_, err := c.ButlerV1alpha1().NetworkPools(ns).Create(context.Background(), &v1alpha1.NetworkPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NetworkPoolSpec{CIDR: cidr},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// CheckPoolInvariants lists every IPAllocation of the pool and checks that no address is held
// twice and that the pool's status adds up to what they hold.
func CheckPoolInvariants(t *testing.T, c clientset.Interface, ns, pool string) {
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
