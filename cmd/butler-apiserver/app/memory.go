package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// MemoryOptions set the Go runtime's soft memory limit (what GOMEMLIMIT sets) to a share of the
// memory the process may use. Without one the heap may grow to twice what is live before the
// collector runs, and a few full Lists of 10,000 TenantClusters leave enough garbage to double
// the server's RSS; with one, the collector works harder as the limit nears instead.
type MemoryOptions struct {
	// Limit is the memory the process may use; zero means the limit of its cgroup, if any.
	Limit resource.QuantityValue
	// Ratio is the share of Limit given to the Go runtime; 0 leaves the runtime's default.
	Ratio float64
	// cgroupRoot is where the cgroup filesystems are mounted (a test sets it).
	cgroupRoot string
}

func defaultMemoryOptions() MemoryOptions {
	return MemoryOptions{Ratio: 0.9, cgroupRoot: "/sys/fs/cgroup"}
}

func (o *MemoryOptions) addFlags(fs *pflag.FlagSet) {
	fs.Var(&o.Limit, "memory-limit",
		"The memory butler-apiserver may use, such as 512Mi; by default the memory limit of its cgroup (a container's limit), if any.")
	fs.Float64Var(&o.Ratio, "memory-limit-ratio", o.Ratio,
		"The share of --memory-limit given to the Go runtime as its soft memory limit; 0 leaves it unset. GOMEMLIMIT in the environment overrides both flags.")
}

func (o *MemoryOptions) validate() error {
	if o.Ratio < 0 || o.Ratio > 1 {
		return fmt.Errorf("--memory-limit-ratio must be between 0 and 1, got %v", o.Ratio)
	}
	if o.Limit.Sign() < 0 {
		return errors.New("--memory-limit must not be negative")
	}
	return nil
}

// apply sets the soft memory limit and returns it, or 0 when it leaves the runtime's own.
func (o *MemoryOptions) apply() int64 {
	if os.Getenv("GOMEMLIMIT") != "" || o.Ratio == 0 {
		return 0
	}
	limit, source := o.Limit.Value(), "--memory-limit"
	if limit == 0 {
		limit, source = cgroupMemoryLimit(o.cgroupRoot, "/proc/self/cgroup"), "cgroup"
	}
	if limit <= 0 {
		return 0
	}
	soft := int64(float64(limit) * o.Ratio)
	debug.SetMemoryLimit(soft)
	klog.InfoS("Set the Go runtime's soft memory limit", "softLimitBytes", soft, "limitBytes", limit, "ratio", o.Ratio, "from", source)
	return soft
}

// unlimited is at or above what cgroup v1 reports for "no limit" (the largest page-aligned int64).
const unlimited = int64(1) << 62

// cgroupMemoryLimit returns the memory limit of the process's cgroup (v2 memory.max, or v1
// memory.limit_in_bytes), or 0 when it has none or none can be read. procCgroup lists the
// process's cgroups; a container with its own cgroup namespace sees its cgroup as the root.
func cgroupMemoryLimit(root, procCgroup string) int64 {
	var candidates []string
	if data, err := os.ReadFile(procCgroup); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			// hierarchy-ID:controllers:path
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				candidates = append(candidates, filepath.Join(root, parts[2], "memory.max"))
			case slices.Contains(strings.Split(parts[1], ","), "memory"):
				candidates = append(candidates, filepath.Join(root, "memory", parts[2], "memory.limit_in_bytes"))
			}
		}
	}
	candidates = append(candidates, filepath.Join(root, "memory.max"), filepath.Join(root, "memory", "memory.limit_in_bytes"))
	for _, file := range candidates {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		value := strings.TrimSpace(string(data))
		if value == "max" {
			return 0
		}
		limit, err := strconv.ParseInt(value, 10, 64)
		if err != nil || limit <= 0 || limit >= unlimited {
			return 0
		}
		return limit
	}
	return 0
}
