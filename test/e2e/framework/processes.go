package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
)

// TenantPids reads the tenant's pid files.
func TenantPids(t *testing.T, dir string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		data, err := os.ReadFile(filepath.Join(dir, c+".pid"))
		if err != nil {
			continue
		}
		var rec struct{ PID int }
		if json.Unmarshal(data, &rec) == nil && rec.PID > 0 {
			pids[c] = rec.PID
		}
	}
	return pids
}

// TenantEtcd is a root client of the datastore the tenant's kube-apiserver stores in (its
// --etcd-servers), found as a control plane provider finds it: through its DataStore object and
// the Secret that names its root client certificate.
func TenantEtcd(t *testing.T, apiserverPid int) *clientv3.Client {
	t.Helper()
	servers := ProcessFlags(t, apiserverPid)["etcd-servers"]
	if servers == "" {
		t.Fatalf("the tenant kube-apiserver (pid %d) has no --etcd-servers", apiserverPid)
	}
	list, err := DynamicClient(t).Resource(datastore.GVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		spec, err := datastore.Parse(&list.Items[i])
		if err != nil || !slices.Contains(spec.Endpoints, strings.TrimPrefix(strings.Split(servers, ",")[0], "https://")) {
			continue
		}
		creds, err := datastore.Load(context.Background(), spec, func(ctx context.Context, ns, name, key string) ([]byte, error) {
			s, err := Plane.Kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return s.Data[key], nil
		})
		if err != nil {
			t.Fatal(err)
		}
		c, err := creds.Connect(creds.Root)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Fatalf("no DataStore has the endpoint of --etcd-servers=%s", servers)
	return nil
}

// ProcessFlags are a process's --flag=value arguments, by flag name.
func ProcessFlags(t *testing.T, pid int) map[string]string {
	t.Helper()
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]string{}
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if name, value, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "="); ok && strings.HasPrefix(arg, "--") {
			args[name] = value
		}
	}
	return args
}

// EtcdKeys counts the keys under prefix.
func EtcdKeys(t *testing.T, c *clientv3.Client, prefix string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}
