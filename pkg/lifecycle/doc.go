// Package lifecycle will hold the background workers that turn stored objects into
// infrastructure: Team namespaces and RBAC, TenantCluster provisioning (Steward control planes,
// Cluster API workers, per-OS bootstrap) and addon installs, each a small controller on the
// generated informers and a workqueue.
package lifecycle
