package store

import (
	"errors"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/ipam"
)

// Capacity thresholds of the NetworkPool conditions, in percent of the pool allocated.
var capacityConditions = []struct {
	condition string
	percent   int64
}{
	{"CapacityWarning", 70},
	{"CapacityCritical", 85},
	{"CapacityExhausted", 95},
}

// SetStatus computes a NetworkPool's status figures and conditions from its allocation state.
func SetStatus(status *butler.NetworkPoolStatus, allocator *ipam.Allocator) {
	s := allocator.Status()
	status.TotalIPs = s.TotalIPs
	status.AllocatedIPs = s.AllocatedIPs
	status.AvailableIPs = s.AvailableIPs
	status.AllocationCount = s.AllocationCount
	status.FragmentationPercent = s.FragmentationPercent
	status.LargestFreeBlock = s.LargestFreeBlock

	var used int64
	if s.TotalIPs > 0 {
		used = s.AllocatedIPs * 100 / s.TotalIPs
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "StateComputed",
		Message: fmt.Sprintf("%d of %d addresses allocated in %d allocations", s.AllocatedIPs, s.TotalIPs, s.AllocationCount),
	})
	for _, c := range capacityConditions {
		cond := metav1.Condition{Type: c.condition, Status: metav1.ConditionFalse, Reason: "BelowThreshold",
			Message: fmt.Sprintf("%d%% allocated, below %d%%", used, c.percent)}
		if used >= c.percent {
			cond.Status, cond.Reason = metav1.ConditionTrue, "AboveThreshold"
			cond.Message = fmt.Sprintf("%d%% allocated, at or above %d%%", used, c.percent)
		}
		meta.SetStatusCondition(&status.Conditions, cond)
	}
}

// describe fills an IPAllocation's status for the range it holds.
func describe(alloc *butler.IPAllocation, r ipam.Range, now time.Time) {
	info := ipam.Describe(r)
	at := metav1.NewTime(now)
	alloc.Status = butler.IPAllocationStatus{
		Phase:          butler.IPAllocationAllocated,
		StartAddress:   info.StartAddress,
		EndAddress:     info.EndAddress,
		CIDR:           info.CIDR,
		Addresses:      info.Addresses,
		AllocatedCount: info.AllocatedCount,
		AllocatedAt:    &at,
	}
	if int64(len(info.Addresses)) < info.AllocatedCount {
		alloc.Status.Message = fmt.Sprintf("addresses lists the first %d of %d", len(info.Addresses), info.AllocatedCount)
	}
}

// heldRange is the range an IPAllocation's status says it holds.
func heldRange(alloc *butler.IPAllocation) (ipam.Range, bool) {
	if alloc.Status.Phase != butler.IPAllocationAllocated {
		return ipam.Range{}, false
	}
	r, err := ipam.ParseRange(alloc.Status.StartAddress, alloc.Status.EndAddress)
	return r, err == nil
}

// allocate reserves what alloc asks for in a.
func allocate(a *ipam.Allocator, alloc *butler.IPAllocation) (ipam.Range, error) {
	if p := alloc.Spec.PinnedRange; p != nil {
		r, err := ipam.ParseRange(p.StartAddress, p.EndAddress)
		if err != nil {
			return ipam.Range{}, err
		}
		return r, a.AllocateRange(r)
	}
	var count uint64 = 1
	if alloc.Spec.Count != nil {
		count = uint64(*alloc.Spec.Count)
	}
	return a.Allocate(count)
}

// apiError turns an allocator error into the API error a client should see.
func apiError(alloc *butler.IPAllocation, err error) error {
	pool := alloc.Spec.PoolRef.Name
	var exhausted *ipam.ExhaustedError
	var conflict *ipam.ConflictError
	var outOfRange *ipam.OutOfRangeError
	switch {
	case errors.As(err, &exhausted), errors.As(err, &conflict):
		return apierrors.NewConflict(butler.Resource("networkpools"), pool, err)
	case errors.As(err, &outOfRange):
		return apierrors.NewInvalid(ipAllocationKind, alloc.Name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "pinnedRange"), alloc.Spec.PinnedRange, err.Error())})
	case apierrors.IsNotFound(err):
		return apierrors.NewInvalid(ipAllocationKind, alloc.Name, field.ErrorList{
			field.NotFound(field.NewPath("spec", "poolRef", "name"), pool)})
	}
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return apierrors.NewInternalError(err)
}

var ipAllocationKind = schema.GroupKind{Group: butler.GroupName, Kind: "IPAllocation"}

// statusUnchanged says whether next's status says what pool's does, but for the observed
// generation, which alone is not worth a write and a watch event.
func statusUnchanged(pool, next *butler.NetworkPool) bool {
	a, b := pool.Status.DeepCopy(), next.Status.DeepCopy()
	a.ObservedGeneration, b.ObservedGeneration = 0, 0
	return apiequality.Semantic.DeepEqual(a, b)
}
