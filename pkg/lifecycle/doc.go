// Package lifecycle holds the background workers that turn stored objects into
// infrastructure, each a small controller on the generated informers and a workqueue, run by
// one butler-apiserver replica at a time under leader election (Run). The first are the Team
// worker (TeamController): a Team's namespace, its members' RoleBindings and its status; and
// the ButlerConfig's status (ButlerConfigController): the Teams and TenantClusters counted.
// TenantCluster provisioning (Steward control planes, Cluster API workers, per-OS bootstrap)
// and addon installs come next.
package lifecycle
