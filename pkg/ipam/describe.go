package ipam

import "math"

// MaxListedAddresses caps AllocationInfo.Addresses: an IPAllocation of a million
// addresses must not store a million strings.
const MaxListedAddresses = 256

// AllocationInfo is what IPAllocationStatus reports about a range, under its field names.
type AllocationInfo struct {
	StartAddress string
	EndAddress   string
	// CIDR is set only when the range is an aligned power-of-two block.
	CIDR string
	// Addresses lists the first MaxListedAddresses addresses.
	Addresses []string
	// AllocatedCount saturates at math.MaxInt64.
	AllocatedCount int64
}

// Describe reports r as an IPAllocation's status shows it.
func Describe(r Range) AllocationInfo {
	info := AllocationInfo{StartAddress: r.First.String(), EndAddress: r.Last.String(), AllocatedCount: math.MaxInt64}
	if p, ok := r.Prefix(); ok {
		info.CIDR = p.String()
	}
	if n, ok := r.Count(); ok {
		info.AllocatedCount = sat64(n)
	}
	for _, a := range r.Addresses(MaxListedAddresses) {
		info.Addresses = append(info.Addresses, a.String())
	}
	return info
}
