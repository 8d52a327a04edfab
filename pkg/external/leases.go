package external

// LeaderLease names a controller of a hosted control plane by the leader-election Lease it
// renews while it runs (client-go's leader election: every 2 s, 15 s held), in the namespace it
// is installed in (ButlerConfig's controlPlaneProviderNamespaces name it). A Lease no longer
// renewed, or released, is a controller that is not running; none at all says nothing (leader
// election off, another engine). The chart grants butler-apiserver `get` on these names only.
type LeaderLease struct {
	// Controller names it for a person ("the Cluster API Steward provider").
	Controller string
	// Name is the Lease's name, the controller's LeaderElectionID.
	Name string
}

// ControllerLeases are the controllers a control plane object of the kind needs, in the order
// they act on it: the Cluster API provider makes the TenantControlPlane, Steward runs it. Both
// run with --leader-elect in their own install files (capi-steward's
// control-plane-components.yaml, Steward's chart). Kamaji's are not known here: nil.
func ControllerLeases(kind string) []LeaderLease {
	if kind != StewardControlPlaneGVK.Kind {
		return nil
	}
	return []LeaderLease{
		// cluster-api-control-plane-provider-steward 78fc830, main.go:138.
		{Controller: "the Cluster API Steward provider", Name: "steward.controlplane.cluster.x-k8s.io"},
		// steward d49041f, cmd/manager/cmd.go:119.
		{Controller: "Steward", Name: "steward.butlerlabs.dev"},
	}
}
