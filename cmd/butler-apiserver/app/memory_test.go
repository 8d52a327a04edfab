package app

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// fakeCgroups writes files under a temporary root, each path relative to it.
func fakeCgroups(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupMemoryLimit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2 container (own cgroup namespace)", map[string]string{
			"proc": "0::/\n", "fs/memory.max": "536870912\n"}, 512 << 20},
		{"v2 without a limit", map[string]string{
			"proc": "0::/\n", "fs/memory.max": "max\n"}, 0},
		{"v2 nested cgroup, its own limit", map[string]string{
			"proc": "0::/kubepods/pod1/c1\n", "fs/kubepods/pod1/c1/memory.max": "1073741824\n", "fs/memory.max": "max\n"}, 1 << 30},
		{"v1 container: its cgroup is the mount's root", map[string]string{
			"proc": "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n", "fs/memory/memory.limit_in_bytes": "268435456\n"}, 256 << 20},
		{"v1 nested cgroup", map[string]string{
			"proc": "4:memory:/a/b\n", "fs/memory/a/b/memory.limit_in_bytes": "268435456\n"}, 256 << 20},
		{"v1 without a limit", map[string]string{
			"proc": "4:memory:/\n", "fs/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0},
		{"no cgroup filesystem", map[string]string{"proc": "0::/\n"}, 0},
		{"garbage", map[string]string{"proc": "0::/\n", "fs/memory.max": "lots\n"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeCgroups(t, tt.files)
			if got := cgroupMemoryLimit(filepath.Join(root, "fs"), filepath.Join(root, "proc")); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestMemoryOptionsApply(t *testing.T) {
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	t.Setenv("GOMEMLIMIT", "")
	root := fakeCgroups(t, map[string]string{"memory.max": "1000000000\n"})

	o := MemoryOptions{Ratio: 0.9, cgroupRoot: root}
	if got := o.apply(); got != 900_000_000 || debug.SetMemoryLimit(-1) != got {
		t.Errorf("from the cgroup: soft limit %d, runtime %d; want 900000000", got, debug.SetMemoryLimit(-1))
	}

	o.Limit = resource.QuantityValue{Quantity: resource.MustParse("100Mi")}
	if got := o.apply(); got != int64(0.9*float64(100<<20)) {
		t.Errorf("from --memory-limit: %d", got)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	o.Ratio = 0
	if got := o.apply(); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("ratio 0 set a limit: %d", got)
	}

	o.Ratio = 0.9
	t.Setenv("GOMEMLIMIT", "1GiB")
	if got := o.apply(); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT in the environment was overridden: %d", got)
	}
}

func TestMemoryOptionsValidate(t *testing.T) {
	for _, ratio := range []float64{-0.1, 1.5} {
		o := defaultMemoryOptions()
		o.Ratio = ratio
		if o.validate() == nil {
			t.Errorf("ratio %v accepted", ratio)
		}
	}
	o := defaultMemoryOptions()
	o.Limit = resource.QuantityValue{Quantity: resource.MustParse("-1Mi")}
	if o.validate() == nil {
		t.Error("a negative --memory-limit accepted")
	}
}
