package validation

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

var ipAllocationTypes = sets.New(butler.IPAllocationNodes, butler.IPAllocationLoadBalancer)

// ValidateNetworkPool validates a NetworkPool on create.
func ValidateNetworkPool(obj *butler.NetworkPool) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateNetworkPoolSpec(&obj.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateNetworkPoolUpdate validates a NetworkPool on update. cidr and ranges may change;
// whether they still cover every live allocation is checked by IPAM, which knows them.
// The address family may not change: every allocation would become meaningless.
func ValidateNetworkPoolUpdate(obj, old *butler.NetworkPool) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateNetworkPoolSpec(&obj.Spec, specPath)...)
	newPrefix, newErrs := parsePrefix(obj.Spec.CIDR, specPath.Child("cidr"))
	oldPrefix, oldErrs := parsePrefix(old.Spec.CIDR, specPath.Child("cidr"))
	if len(newErrs) == 0 && len(oldErrs) == 0 && newPrefix.Addr().Is4() != oldPrefix.Addr().Is4() {
		allErrs = append(allErrs, field.Invalid(specPath.Child("cidr"), obj.Spec.CIDR,
			fmt.Sprintf("may not change IP family from %s to %s", family(oldPrefix.Addr()), family(newPrefix.Addr()))))
	}
	return allErrs
}

// ValidateNetworkPoolStatusUpdate validates a write to NetworkPool's status subresource. The
// registry recomputes the status from the allocation state; this only rejects impossible numbers.
func ValidateNetworkPoolStatusUpdate(obj, old *butler.NetworkPool) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	status := &obj.Status
	statusPath := field.NewPath("status")
	allErrs = append(allErrs, validateMinimum(status.TotalIPs, 0, statusPath.Child("totalIPs"))...)
	allErrs = append(allErrs, validateMinimum(status.AllocatedIPs, 0, statusPath.Child("allocatedIPs"))...)
	allErrs = append(allErrs, validateMinimum(status.AvailableIPs, 0, statusPath.Child("availableIPs"))...)
	allErrs = append(allErrs, validateMinimum(status.AllocationCount, 0, statusPath.Child("allocationCount"))...)
	allErrs = append(allErrs, validateMinimum(status.LargestFreeBlock, 0, statusPath.Child("largestFreeBlock"))...)
	allErrs = append(allErrs, validateMinimum(status.ObservedGeneration, 0, statusPath.Child("observedGeneration"))...)
	if f := status.FragmentationPercent; f < 0 || f > 100 {
		allErrs = append(allErrs, field.Invalid(statusPath.Child("fragmentationPercent"), f, "must be between 0 and 100"))
	}
	return allErrs
}

func validateNetworkPoolSpec(spec *butler.NetworkPoolSpec, fldPath *field.Path) field.ErrorList {
	pool, allErrs := parsePrefix(spec.CIDR, fldPath.Child("cidr"))
	poolOK := len(allErrs) == 0

	for i, r := range spec.Reserved {
		cidrPath := fldPath.Child("reserved").Index(i).Child("cidr")
		reserved, errs := parsePrefix(r.CIDR, cidrPath)
		allErrs = append(allErrs, errs...)
		if len(errs) > 0 || !poolOK {
			continue
		}
		switch {
		case reserved.Addr().Is4() != pool.Addr().Is4():
			allErrs = append(allErrs, field.Invalid(cidrPath, r.CIDR, fmt.Sprintf("must be the same IP family as spec.cidr (%s)", family(pool.Addr()))))
		case reserved.Bits() < pool.Bits() || !pool.Contains(reserved.Addr()):
			allErrs = append(allErrs, field.Invalid(cidrPath, r.CIDR, fmt.Sprintf("must be inside spec.cidr (%s)", spec.CIDR)))
		}
	}

	rangesPath := fldPath.Child("ranges")
	var valid []addrRange
	var validIdx []int
	for i, r := range spec.Ranges {
		idxPath := rangesPath.Index(i)
		rng, ok, errs := validateAddrRange(r.Start, r.End, idxPath.Child("start"), idxPath.Child("end"))
		allErrs = append(allErrs, errs...)
		if !ok || !poolOK {
			continue
		}
		if rng.start.Is4() != pool.Addr().Is4() {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("start"), r.Start, fmt.Sprintf("must be the same IP family as spec.cidr (%s)", family(pool.Addr()))))
			continue
		}
		inside := true
		if !pool.Contains(rng.start) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("start"), r.Start, fmt.Sprintf("must be inside spec.cidr (%s)", spec.CIDR)))
			inside = false
		}
		if !pool.Contains(rng.end) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("end"), r.End, fmt.Sprintf("must be inside spec.cidr (%s)", spec.CIDR)))
			inside = false
		}
		if !inside {
			continue
		}
		// Overlapping ranges would let IPAM count and hand out the same address twice.
		for j, prev := range valid {
			if rng.overlaps(prev) {
				allErrs = append(allErrs, field.Invalid(idxPath, rng.String(), fmt.Sprintf("must not overlap %s (%s)", rangesPath.Index(validIdx[j]), prev)))
			}
		}
		valid = append(valid, rng)
		validIdx = append(validIdx, i)
	}

	defaultsPath := fldPath.Child("defaults")
	allErrs = append(allErrs, validateOptionalMinimum(spec.Defaults.NodesPerTenant, 1, defaultsPath.Child("nodesPerTenant"))...)
	allErrs = append(allErrs, validateOptionalMinimum(spec.Defaults.LBPoolPerTenant, 1, defaultsPath.Child("lbPoolPerTenant"))...)
	return allErrs
}

// ValidateIPAllocation validates an IPAllocation on create (directly or through
// networkpools/allocate).
func ValidateIPAllocation(obj *butler.IPAllocation) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateIPAllocationSpec(&obj.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateIPAllocationUpdate validates an IPAllocation on update. The spec describes addresses
// already reserved in the pool, so it cannot change; release and allocate again instead.
func ValidateIPAllocationUpdate(obj, old *butler.IPAllocation) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if !apiequality.Semantic.DeepEqual(obj.Spec, old.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "spec is immutable: delete the IPAllocation and create a new one"))
	}
	return allErrs
}

// ValidateIPAllocationStatusUpdate validates a write to IPAllocation's status subresource.
// The allocator owns every field but message: it wrote them in the transaction that
// reserved the addresses, and the release frees the range they name, so a client that could
// change them could free another tenant's addresses.
func ValidateIPAllocationStatusUpdate(obj, old *butler.IPAllocation) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	newStatus, oldStatus := obj.Status, old.Status
	newStatus.Message, oldStatus.Message = "", ""
	if !apiequality.Semantic.DeepEqual(newStatus, oldStatus) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("status"),
			"only status.message may be changed: the other fields are set by the allocator"))
	}
	return allErrs
}

func validateIPAllocationSpec(spec *butler.IPAllocationSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateDNSSubdomain(spec.PoolRef.Name, fldPath.Child("poolRef", "name"))
	allErrs = append(allErrs, validateNamespacedRef(spec.TenantClusterRef, utilvalidation.IsDNS1123Subdomain, fldPath.Child("tenantClusterRef"))...)
	allErrs = append(allErrs, validateRequiredEnum(spec.Type, ipAllocationTypes, fldPath.Child("type"))...)

	switch {
	case spec.Count != nil && spec.PinnedRange != nil:
		allErrs = append(allErrs, field.Forbidden(fldPath, "exactly one of count or pinnedRange may be set, not both"))
	case spec.Count == nil && spec.PinnedRange == nil:
		allErrs = append(allErrs, field.Required(fldPath, "exactly one of count or pinnedRange must be set"))
	}
	allErrs = append(allErrs, validateOptionalMinimum(spec.Count, 1, fldPath.Child("count"))...)
	if pr := spec.PinnedRange; pr != nil {
		prPath := fldPath.Child("pinnedRange")
		_, _, errs := validateAddrRange(pr.StartAddress, pr.EndAddress, prPath.Child("startAddress"), prPath.Child("endAddress"))
		allErrs = append(allErrs, errs...)
	}
	return allErrs
}
