// Package lifecycle runs the background controllers that turn stored butler objects into
// infrastructure, under leader election so that one butler-apiserver replica at a time acts
// (Run). Each controller is a package of its own built on controllerkit (the one queue loop,
// the shared informers); the table in run.go lists them:
//   - team: a Team's namespace, its members' RoleBindings, its reader role and its status;
//   - butlerconfig: the ButlerConfig's status (Teams and TenantClusters counted);
//   - providerconfig: a ProviderConfig's status (its provider block, credentials and pools checked);
//   - tenantcluster: a TenantCluster's namespace, addresses, control plane, infrastructure,
//     workers and addons, written as named steps (steps/) from builders (component/);
//   - tenantaddon: Helm releases in tenant clusters;
//   - bootstrap: the bootstrap data of each worker machine, per OS;
//   - snapshotschedule, maintenance, updaterun: scheduled snapshots, maintenance windows' version
//     updates, fleet update runs;
//   - managementaddon: Helm releases in the management cluster.
package lifecycle
