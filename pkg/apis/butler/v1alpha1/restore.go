package v1alpha1

// RestorePending says whether the cluster's data is being replaced, or is about to be, by the
// restore its spec.restoreFrom asks for: until status.restore records that snapshot restored, a
// snapshot of the cluster would hold part of the old data or part of the new. A failed restore
// stays pending (the control plane stays stopped until the user acts).
func (tc *TenantCluster) RestorePending() bool {
	if tc.Spec.RestoreFrom == nil {
		return false
	}
	r := tc.Status.Restore
	return r == nil || r.SnapshotName != tc.Spec.RestoreFrom.Name || r.Phase != RestoreSucceeded
}

// RestorePin is what RestorePinAnnotation records of a snapshot: its cluster and its UID, which
// no snapshot made again under the same name shares.
func RestorePin(cluster, uid string) string { return cluster + "/" + uid }
