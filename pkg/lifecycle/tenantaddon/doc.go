// Package tenantaddon is the TenantAddon controller: it installs each TenantAddon's Helm chart
// into its tenant cluster through pkg/addons and keeps a status that does not lie.
//
// One reconcile reads as its steps:
//   - a deleted addon is uninstalled behind the finalizer butler.butlerlabs.dev/tenantaddon;
//     when its TenantCluster is gone, or is being deleted and its control plane cannot be
//     reached, the finalizer is dropped rather than hang the cluster's deletion (the status
//     message and the log say so);
//   - the TenantCluster (spec.clusterRef, same namespace) must have a control plane: its
//     status.tenantNamespace and status.kubeconfigSecretRef, a Secret in the management cluster
//     whose admin.conf (else value) is the admin kubeconfig;
//   - every dependency must be Installed: spec.dependsOn (TenantAddons of the same cluster: a
//     same-named addon of another cluster in the namespace is not it) and, for a catalog addon, the AddonDefinition's dependsOn (the cluster's TenantAddons of
//     those definitions, when it has any). A cycle is the condition DependencyCycle;
//   - the desired release: the chart from the AddonDefinition (spec.addon) or spec.helm; the
//     version from spec.version, else the cluster's slot (spec.addons.<slot>.version, the slot
//     named by the label butler.butlerlabs.dev/addon-slot), else the ButlerConfig's
//     defaultAddonVersions, else the definition's defaultVersion; values layered as Helm
//     layers -f files: the definition's defaults.values, the slot's values, spec.values;
//   - least privilege when a Team set the values: a chart named by spec.helm, or a catalog chart
//     carrying spec.values or slot values whose AddonDefinition does not set trustTeamValues, is
//     checked, on what Helm renders and sends, against the allow-list of a Team's chart and
//     refused naming each object, reason Refused (restriction, addons/privilege.go);
//   - the release namespace of a catalog addon without restriction is server-side applied with the label
//     butler.butlerlabs.dev/protected (made so when missing; not a system namespace): the Team's
//     operators get no binding there (package access); one that exists unlabelled (it may hold
//     what operators left) or cannot be marked is Pending, reason NamespaceNotProtected, until a
//     tenant admin labels it, and tried again after the backoff;
//   - Ensure through the engine; phase Installing or Upgrading is written before Helm starts,
//     Installed after it succeeded, Failed (or Degraded when a failed upgrade was rolled back
//     and the previous revision still runs) with Helm's error text in status.message;
//   - MetalLB then gets the cluster's load-balancer addresses (its Allocated load-balancer
//     IPAllocation from status.ipAllocationRefs, else spec.networking.loadBalancerPool) as an
//     IPAddressPool and L2Advertisement "butler-lb" in its namespace, server-side applied: the
//     upstream chart takes no pool in its values. A refused pool is Degraded.
//
// A deleted addon is uninstalled after the addons of its cluster that depend on it (all of them
// when the cluster is being deleted, else those being deleted too): with c -> b -> a, c goes
// first, then b, then a, each waiting (WaitingForDependents) for the one before to be gone.
//
// Progress is event driven: a TenantAddon's changes queue every addon of its cluster (its
// dependents among them), a TenantCluster's changes queue its addons, an AddonDefinition's
// the addons made from it. An Installed addon is looked at again every ten minutes (a release
// removed behind Butler's back is installed again); a failed one after a backoff that doubles
// from 15 seconds to 5 minutes, since every Helm attempt writes a release revision.
// Independent addons install in parallel, bounded by the number of queue workers; one release
// is never worked on twice at once.
package tenantaddon
