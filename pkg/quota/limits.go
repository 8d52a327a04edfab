// Package quota holds Team limits: the effective limits of a Team (its own resourceLimits over
// ButlerConfig's defaultTeamLimits), what a TenantCluster counts against them, the checks that
// name the limit and the usage, and the Ledger that makes the aggregate checks race-free.
package quota

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// EffectiveLimits returns a Team's limits: each field the Team sets, else the same field of
// ButlerConfig's defaultTeamLimits. Either may be nil. The result is never nil.
func EffectiveLimits(team *butler.Team, config *butler.ButlerConfig) *butler.ResourceLimits {
	out := &butler.ResourceLimits{}
	var defaults *butler.ResourceLimits
	if config != nil {
		defaults = config.Spec.DefaultTeamLimits
	}
	var own *butler.ResourceLimits
	if team != nil {
		own = team.Spec.ResourceLimits
	}
	for _, l := range []*butler.ResourceLimits{defaults, own} {
		if l == nil {
			continue
		}
		if l.MaxClusters != nil {
			out.MaxClusters = l.MaxClusters
		}
		if l.MaxWorkersPerCluster != nil {
			out.MaxWorkersPerCluster = l.MaxWorkersPerCluster
		}
		if l.MaxTotalWorkers != nil {
			out.MaxTotalWorkers = l.MaxTotalWorkers
		}
		if l.MaxTotalCPU != nil {
			out.MaxTotalCPU = l.MaxTotalCPU
		}
		if l.MaxTotalMemory != nil {
			out.MaxTotalMemory = l.MaxTotalMemory
		}
		if l.MaxTotalStorage != nil {
			out.MaxTotalStorage = l.MaxTotalStorage
		}
		if l.AllowedKubernetesVersions != nil {
			out.AllowedKubernetesVersions = l.AllowedKubernetesVersions
		}
		if l.AllowedProviders != nil {
			out.AllowedProviders = l.AllowedProviders
		}
		if l.AllowedAddons != nil {
			out.AllowedAddons = l.AllowedAddons
		}
		if l.DeniedAddons != nil {
			out.DeniedAddons = l.DeniedAddons
		}
		if l.MaxSnapshots != nil {
			out.MaxSnapshots = l.MaxSnapshots
		}
		if l.MaxSnapshotBytes != nil {
			out.MaxSnapshotBytes = l.MaxSnapshotBytes
		}
	}
	return out
}

// HasAggregate says whether any limit sums over the Team's clusters.
func HasAggregate(l *butler.ResourceLimits) bool {
	return l.MaxClusters != nil || l.MaxTotalWorkers != nil || l.MaxTotalCPU != nil ||
		l.MaxTotalMemory != nil || l.MaxTotalStorage != nil
}

// Usage is what clusters count against a Team's aggregate limits. CPU is in millicores,
// memory and storage in bytes.
type Usage struct {
	Clusters int64 `json:"c,omitempty"`
	Workers  int64 `json:"w,omitempty"`
	CPU      int64 `json:"cpu,omitempty"`
	Memory   int64 `json:"mem,omitempty"`
	Storage  int64 `json:"st,omitempty"`
}

// Add returns u + o.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.Clusters + o.Clusters, u.Workers + o.Workers, u.CPU + o.CPU, u.Memory + o.Memory, u.Storage + o.Storage}
}

// Max returns the larger of u and o in each dimension.
func (u Usage) Max(o Usage) Usage {
	return Usage{max(u.Clusters, o.Clusters), max(u.Workers, o.Workers), max(u.CPU, o.CPU), max(u.Memory, o.Memory), max(u.Storage, o.Storage)}
}

// ClusterUsage is what one TenantCluster counts: one cluster and its workers (each with the
// machine template's CPU, memory and disk). Control plane machines are not counted.
func ClusterUsage(tc *butler.TenantCluster) Usage {
	return ClusterUsageWithWorkers(tc, tc.Spec.Workers.Replicas)
}

// ClusterUsageWithWorkers is ClusterUsage as if the cluster had this many workers.
func ClusterUsageWithWorkers(tc *butler.TenantCluster, workers int32) Usage {
	mt := tc.Spec.Workers.MachineTemplate
	cpu := int64(v1alpha1.DefaultWorkerCPU)
	if mt.CPU != nil {
		cpu = int64(*mt.CPU)
	}
	mem := defaultWorkerMemory
	if mt.Memory != nil {
		mem = mt.Memory.Value()
	}
	disk := defaultWorkerDisk
	if mt.DiskSize != nil {
		disk = mt.DiskSize.Value()
	}
	n := int64(max(workers, 0))
	return Usage{Clusters: 1, Workers: n, CPU: n * cpu * 1000, Memory: n * mem, Storage: n * disk}
}

// The defaults in bytes, parsed once: the Ledger computes the usage of every cluster of a Team
// on each admission.
var (
	defaultWorkerMemory = bytesOf(v1alpha1.DefaultWorkerMemory)
	defaultWorkerDisk   = bytesOf(v1alpha1.DefaultWorkerDiskSize)
)

func bytesOf(quantity string) int64 {
	q := resource.MustParse(quantity)
	return q.Value()
}

// ToResourceUsage turns a Usage into the Team status field.
func (u Usage) ToResourceUsage() *butler.ResourceUsage {
	return &butler.ResourceUsage{
		Clusters: int32(u.Clusters),
		Nodes:    int32(u.Workers),
		CPU:      resource.NewMilliQuantity(u.CPU, resource.DecimalSI),
		Memory:   resource.NewQuantity(u.Memory, resource.BinarySI),
		Storage:  resource.NewQuantity(u.Storage, resource.BinarySI),
	}
}

// dimension is one aggregate limit.
type dimension struct {
	name   string
	limit  func(*butler.ResourceLimits) (int64, bool)
	value  func(Usage) int64
	format func(int64) string
}

func count(v int64) string { return fmt.Sprint(v) }
func cpu(v int64) string   { return resource.NewMilliQuantity(v, resource.DecimalSI).String() }
func bytes(v int64) string { return resource.NewQuantity(v, resource.BinarySI).String() }

func int32Limit(f func(*butler.ResourceLimits) *int32) func(*butler.ResourceLimits) (int64, bool) {
	return func(l *butler.ResourceLimits) (int64, bool) {
		if p := f(l); p != nil {
			return int64(*p), true
		}
		return 0, false
	}
}

var dimensions = []dimension{
	{"maxClusters", int32Limit(func(l *butler.ResourceLimits) *int32 { return l.MaxClusters }),
		func(u Usage) int64 { return u.Clusters }, count},
	{"maxTotalWorkers", int32Limit(func(l *butler.ResourceLimits) *int32 { return l.MaxTotalWorkers }),
		func(u Usage) int64 { return u.Workers }, count},
	{"maxTotalCPU", func(l *butler.ResourceLimits) (int64, bool) {
		if l.MaxTotalCPU == nil {
			return 0, false
		}
		return l.MaxTotalCPU.MilliValue(), true
	}, func(u Usage) int64 { return u.CPU }, cpu},
	{"maxTotalMemory", func(l *butler.ResourceLimits) (int64, bool) {
		if l.MaxTotalMemory == nil {
			return 0, false
		}
		return l.MaxTotalMemory.Value(), true
	}, func(u Usage) int64 { return u.Memory }, bytes},
	{"maxTotalStorage", func(l *butler.ResourceLimits) (int64, bool) {
		if l.MaxTotalStorage == nil {
			return 0, false
		}
		return l.MaxTotalStorage.Value(), true
	}, func(u Usage) int64 { return u.Storage }, bytes},
}

// CheckAggregate checks a change of one cluster's usage from old to new, with others the usage of
// every other cluster of the team. A dimension is refused only when the change grows it and the
// total would pass the limit, so lowering a limit never blocks shrinking or unrelated edits.
// The error names the team, the limit, the usage and the request.
func CheckAggregate(team string, limits *butler.ResourceLimits, others, old, new Usage) error {
	if msg := exceeded(dimensions, limits, others, old, new); msg != "" {
		return fmt.Errorf("exceeds the limits of team %q: %s", team, msg)
	}
	return nil
}

// Quota statuses of a Team.
const (
	StatusOK       = "OK"
	StatusWarning  = "Warning"
	StatusExceeded = "Exceeded"
)

// Status summarizes usage against limits: Exceeded when a limit is passed (after it was
// lowered, say), Warning at 80 % or more of any limit, else OK; and a message naming them.
func Status(limits *butler.ResourceLimits, usage Usage) (string, string) {
	status := StatusOK
	var msgs []string
	for _, d := range dimensions {
		limit, ok := d.limit(limits)
		if !ok {
			continue
		}
		v := d.value(usage)
		switch {
		case v > limit:
			status = StatusExceeded
			msgs = append(msgs, fmt.Sprintf("%s %s/%s exceeded", d.name, d.format(v), d.format(limit)))
		case limit > 0 && v*5 >= limit*4:
			if status == StatusOK {
				status = StatusWarning
			}
			msgs = append(msgs, fmt.Sprintf("%s %s/%s", d.name, d.format(v), d.format(limit)))
		}
	}
	return status, strings.Join(msgs, "; ")
}
