package datastore

import (
	"fmt"
	"sort"
)

// Candidate is a datastore a tenant may be placed on: how many tenants it has and how many it
// may have (0: no limit).
type Candidate struct {
	Name    string
	Tenants int
	Limit   int
}

// Place picks the candidate with the fewest tenants among those below their limit, the first
// by name on a tie, so that two providers (or two passes) agree.
func Place(candidates []Candidate) (string, error) {
	if len(candidates) == 0 {
		return "", fmt.Errorf("no DataStore of driver %s exists", DriverEtcd)
	}
	sorted := append([]Candidate(nil), candidates...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Tenants != sorted[j].Tenants {
			return sorted[i].Tenants < sorted[j].Tenants
		}
		return sorted[i].Name < sorted[j].Name
	})
	for _, c := range sorted {
		if c.Limit == 0 || c.Tenants < c.Limit {
			return c.Name, nil
		}
	}
	if len(sorted) == 1 {
		return "", fmt.Errorf("DataStore %s is full: %d tenants, its limit is %d", sorted[0].Name, sorted[0].Tenants, sorted[0].Limit)
	}
	return "", fmt.Errorf("every DataStore is full (%d of them, each at its limit of tenants)", len(candidates))
}
