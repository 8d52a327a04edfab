// Package framework is what the e2e suites share: starting the local management plane for a
// TestMain (Run) and stopping it with nothing left, kubectl and the clientsets as the plane's
// admin, the waits and manifests of TenantClusters, Teams and local machines, and the
// longest-first order of the parallel tests (LongestFirst) with its durations file.
package framework
