// Package addons installs Helm charts into tenant clusters with the Helm v3 SDK (no helm CLI).
//
// Charts come from three kinds of source (ChartRef): http(s):// repositories (index.yaml, the
// chart archive found through it and checked against its digest), oci:// registries (Helm's
// registry client) and local paths for charts bundled with the platform. Archives are kept in a
// cache directory on disk, one file per repository, chart and version, so a chart is fetched
// once and only its parsed form lives in memory, for the length of one operation.
//
// Values come in layers (Merge): the AddonDefinition's defaults, then the cluster's own values
// for the addon's slot, then the TenantAddon's values, each later layer winning key by key as
// Helm layers several -f files; a null in a later layer removes the key, as in Helm. Hash of the
// merged values is what tells a values change: the engine compares it with the values stored in
// the deployed release itself (Helm's own record), so a change made behind its back is seen too.
//
// Engine keeps one action.Configuration per (tenant cluster, namespace), built on a
// RESTClientGetter over the tenant's admin kubeconfig (one discovery cache and REST mapper per
// cluster, shared by its namespaces). Building a Configuration builds a kubectl factory and
// clients, so they are cached; the cache entry is rebuilt when the kubeconfig changes and
// dropped by Forget when the cluster goes. Every action runs on a shallow copy of the cached
// Configuration with its Capabilities cleared, so each install or upgrade renders against the
// cluster's API versions of that moment (a CRD installed by one chart is seen by the next) and
// concurrent actions never write a shared field. Work on one release is serialized by a lock
// per (cluster, namespace, release); different releases proceed in parallel.
//
// The Helm pitfalls this package handles: Upgrade.Install does not install a missing release,
// so the history is read first and a missing release is installed with Install; a Timeout is
// always set (zero makes Helm's wait fail at once, and its wait ignores the context), and the
// context Helm is given is never cancelled (Install and Upgrade watch it from a goroutine that
// outlives the call: a cancel seen after success records the release as failed);
// ResetValues is always set on upgrade (Helm otherwise reuses the old values when the new ones
// are empty); a release left pending by a process that died mid-operation is marked failed once
// its timeout has passed, so the next operation can proceed; a failed upgrade is rolled back to
// the last deployed revision and reported with Helm's own error text.
package addons
