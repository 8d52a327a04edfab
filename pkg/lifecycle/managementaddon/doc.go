// Package managementaddon is the ManagementAddon controller: it installs a platform admin's
// addon (Flux, for one) into the management cluster itself, through pkg/addons' Helm engine as
// TenantAddons are installed into tenants, with the rights of the ServiceAccount the addon names
// and none of butler-apiserver's own.
//
// One reconcile reads as its steps:
//   - a deleted addon is uninstalled, as the same account, behind the finalizer
//     butler.butlerlabs.dev/managementaddon; an uninstall the account may not do keeps it
//     Deleting (UninstallFailed, Helm's words) until its rights come back or a platform admin
//     removes the finalizer;
//   - the target: the management cluster as the controller reaches it (its own server, CA and
//     credential) with kube-apiserver's impersonation of system:serviceaccount:<ns>:<name>
//     (impersonatingKubeconfig), so every request of the release is authorized as the account;
//   - the desired release: the AddonDefinition's chart, version (spec.version, else the
//     ButlerConfig's default for it, else the definition's) and defaults, or spec.helm; values
//     layered as Helm layers -f files, the definition's defaults.values then spec.values;
//   - Ensure through the engine, owner label the addon's UID; phase Installing or Upgrading is
//     written before Helm starts, Installed after, Failed (Degraded when a failed upgrade was
//     rolled back) with Helm's error text. A refusal to impersonate is AccountNotGranted, naming
//     the chart value that grants it.
//
// An Installed addon is looked at again every ten minutes (a release removed behind its back is
// installed again); a failed one after a backoff that doubles from 15 seconds to 5 minutes.
// A change of the addon, or of the AddonDefinition it is made from, queues it.
package managementaddon
