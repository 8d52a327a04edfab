// Package admission holds butler-apiserver's own admission plugins:
//
//   - butler.butlerlabs.dev/MultiTenancy: a TenantCluster's teamRef, if set, names the Team of its
//     namespace; with ButlerConfig's multiTenancy.mode Enforced it must live in a Team's namespace.
//   - butler.butlerlabs.dev/ProviderConfigUse: a TenantCluster uses a ProviderConfig of its own
//     namespace or one shared with it (spec.scope), within the ProviderConfig's limits (through
//     the quota Ledger, held on the ProviderConfig).
//   - butler.butlerlabs.dev/DataStoreUse: a TenantCluster's dataStoreRef names a DataStore
//     offered to its Team (the DataStore's butler.butlerlabs.dev/teams) or the asker's, below
//     its max-tenants.
//   - butler.butlerlabs.dev/AddonSources: a TenantAddon's chart comes from the platform's catalog
//     (an AddonDefinition, or the repository and chart one lists) unless a platform admin asks.
//   - butler.butlerlabs.dev/TeamLimits: a Team's resourceLimits (ButlerConfig's
//     defaultTeamLimits where the Team sets none) on TenantCluster create and update,
//     tenantclusters/scale and TenantAddon create and update; aggregate limits go through the
//     quota Ledger, so concurrent requests cannot pass a limit together, and a cluster's delete
//     frees its share at once.
//   - butler.butlerlabs.dev/TeamInUse: a Team whose namespace holds TenantClusters cannot be deleted.
//   - butler.butlerlabs.dev/SnapshotRestore: who may set spec.restoreFrom, and from what.
//   - butler.butlerlabs.dev/SnapshotLimits: a TenantClusterSnapshot's cluster exists, and its
//     Team's maxSnapshots and maxSnapshotBytes hold.
//   - butler.butlerlabs.dev/VersionCatalog: a TenantCluster's kubernetesVersion is one the platform's
//     catalog (ButlerConfig's kubernetesVersions) offers and has not expired, on create and when
//     it changes (a 422 on spec.kubernetesVersion).
//   - butler.butlerlabs.dev/UpdateRunRefs: an UpdateRun's strategyRef names an UpdateStrategy of
//     its namespace and its target version is one the catalog offers (422s naming the field).
//   - butler.butlerlabs.dev/ProviderSupport: a TenantCluster's machine OS must be one that can
//     boot on its ProviderConfig's provider (a 422 with the reason otherwise).
//   - butler.butlerlabs.dev/GitOpsSource: whoever sets or redirects spec.addons.gitops.repository
//     may get the Secret it names (403), and its URL names no address the outbound fetch policy
//     refuses (422 at the url); what it decided is pinned (v1alpha1.GitOpsSourcePinAnnotation).
//   - butler.butlerlabs.dev/ManagementAddonAccount: whoever creates a ManagementAddon or changes
//     its spec may impersonate the ServiceAccount it is installed as (403).
//
// They read butler objects only, from butler-apiserver's own storage, so they run the same with
// and without a management cluster. They are enabled by default, after the generic plugins
// (webhooks and policies of the management cluster run first, so a request those refuse takes
// no quota reservation).
package admission

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	autoscaling "k8s.io/client-go/scale/scheme"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// Plugin names.
const (
	MultiTenancyName           = "butler.butlerlabs.dev/MultiTenancy"
	ProviderConfigUseName      = "butler.butlerlabs.dev/ProviderConfigUse"
	AddonSourcesName           = "butler.butlerlabs.dev/AddonSources"
	TeamLimitsName             = "butler.butlerlabs.dev/TeamLimits"
	TeamInUseName              = "butler.butlerlabs.dev/TeamInUse"
	ProviderSupportName        = "butler.butlerlabs.dev/ProviderSupport"
	SnapshotRestoreName        = "butler.butlerlabs.dev/SnapshotRestore"
	DataStoreUseName           = "butler.butlerlabs.dev/DataStoreUse"
	SnapshotLimitsName         = "butler.butlerlabs.dev/SnapshotLimits"
	VersionCatalogName         = "butler.butlerlabs.dev/VersionCatalog"
	UpdateRunRefsName          = "butler.butlerlabs.dev/UpdateRunRefs"
	GitOpsSourceName           = "butler.butlerlabs.dev/GitOpsSource"
	ManagementAddonAccountName = "butler.butlerlabs.dev/ManagementAddonAccount"
)

// Names are the plugins in the order they run.
var Names = []string{MultiTenancyName, ProviderConfigUseName, DataStoreUseName, AddonSourcesName, VersionCatalogName, UpdateRunRefsName, ProviderSupportName, GitOpsSourceName, ManagementAddonAccountName, SnapshotRestoreName, SnapshotLimitsName, TeamLimitsName, TeamInUseName}

// Register registers the plugins.
func Register(plugins *admission.Plugins) {
	plugins.Register(MultiTenancyName, func(io.Reader) (admission.Interface, error) { return NewMultiTenancy(), nil })
	plugins.Register(ProviderConfigUseName, func(io.Reader) (admission.Interface, error) { return NewProviderConfigUse(), nil })
	plugins.Register(AddonSourcesName, func(io.Reader) (admission.Interface, error) { return NewAddonSources(), nil })
	plugins.Register(TeamLimitsName, func(io.Reader) (admission.Interface, error) { return NewTeamLimits(), nil })
	plugins.Register(TeamInUseName, func(io.Reader) (admission.Interface, error) { return NewTeamInUse(), nil })
	plugins.Register(ProviderSupportName, func(io.Reader) (admission.Interface, error) { return NewProviderSupport(), nil })
	plugins.Register(SnapshotRestoreName, func(io.Reader) (admission.Interface, error) { return NewSnapshotRestore(), nil })
	plugins.Register(DataStoreUseName, func(io.Reader) (admission.Interface, error) { return NewDataStoreUse(), nil })
	plugins.Register(SnapshotLimitsName, func(io.Reader) (admission.Interface, error) { return NewSnapshotLimits(), nil })
	plugins.Register(VersionCatalogName, func(io.Reader) (admission.Interface, error) { return NewVersionCatalog(), nil })
	plugins.Register(UpdateRunRefsName, func(io.Reader) (admission.Interface, error) { return NewUpdateRunRefs(), nil })
	plugins.Register(GitOpsSourceName, func(io.Reader) (admission.Interface, error) { return NewGitOpsSource(), nil })
	plugins.Register(ManagementAddonAccountName, func(io.Reader) (admission.Interface, error) { return NewManagementAddonAccount(), nil })
}

// WantsLedger is a plugin that reads butler objects through the quota Ledger's Store.
type WantsLedger interface {
	SetLedger(*quota.Ledger)
	admission.InitializationValidator
}

// Initializer hands the Ledger to the plugins, and an authorizer where there is no generic
// chain to hand one.
type Initializer struct {
	Ledger     *quota.Ledger
	Authorizer authorizer.Authorizer
	// SnapshotDir is the directory snapshot store this server may read ("": none).
	SnapshotDir string
	// DataStores reads the management cluster's DataStores (nil: none, standalone).
	DataStores DataStoreGetter
	// Fetch is the outbound fetch policy URLs are checked against (the zero policy allows no
	// internal address).
	Fetch addons.FetchPolicy
}

// Initialize implements admission.PluginInitializer.
func (i Initializer) Initialize(p admission.Interface) {
	if w, ok := p.(WantsLedger); ok {
		w.SetLedger(i.Ledger)
	}
	if w, ok := p.(initializer.WantsAuthorizer); ok && i.Authorizer != nil {
		w.SetAuthorizer(i.Authorizer)
	}
	if w, ok := p.(WantsSnapshotDir); ok {
		w.SetSnapshotDir(i.SnapshotDir)
	}
	if w, ok := p.(WantsDataStores); ok && i.DataStores != nil {
		w.SetDataStores(i.DataStores)
	}
	if w, ok := p.(WantsFetchPolicy); ok {
		w.SetFetchPolicy(i.Fetch)
	}
}

// base is what the plugins share.
type base struct {
	*admission.Handler
	ledger *quota.Ledger
}

func (b *base) SetLedger(l *quota.Ledger) { b.ledger = l }

func (b *base) ValidateInitialization() error {
	if b.ledger == nil {
		return fmt.Errorf("no quota ledger")
	}
	return nil
}

func (b *base) store() quota.Store { return b.ledger.Store }

// teamOf returns the Team whose namespace ns is, or nil; a failed read is a 500.
func (b *base) teamOf(ctx context.Context, ns string) (*butler.Team, error) {
	if ns == "" {
		return nil, nil
	}
	team, err := b.store().Team(ctx, ns)
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, apierrors.NewInternalError(err)
	}
	return team, nil
}

// clusterChange is the TenantCluster a create, update or tenantclusters/scale request would
// store and the one stored before (nil for a create); nil, nil for other objects. A Scale is
// applied to the stored cluster, as of the Scale's resourceVersion.
func (b *base) clusterChange(ctx context.Context, a admission.Attributes) (tc, old *butler.TenantCluster, err error) {
	switch obj := a.GetObject().(type) {
	case *butler.TenantCluster:
		if a.GetOperation() == admission.Update {
			old, _ = a.GetOldObject().(*butler.TenantCluster)
		}
		return obj, old, nil
	case *autoscaling.Scale:
		oldScale, ok := a.GetOldObject().(*autoscaling.Scale)
		if !ok {
			return nil, nil, nil
		}
		stored, err := b.store().Cluster(ctx, a.GetNamespace(), a.GetName())
		if err != nil {
			return nil, nil, err
		}
		old = stored.DeepCopy()
		old.Spec.Workers.Replicas = oldScale.Spec.Replicas
		old.ResourceVersion = oldScale.ResourceVersion
		tc = old.DeepCopy()
		tc.Spec.Workers.Replicas = obj.Spec.Replicas
		return tc, old, nil
	}
	return nil, nil, nil
}

var (
	tenantClusters = butler.Resource("tenantclusters")
	tenantAddons   = butler.Resource("tenantaddons")
	teams          = butler.Resource("teams")
)

// New returns the plugins, initialized, in order: for a server without a management cluster,
// where the generic admission chain (which needs one) does not run.
func New(ledger *quota.Ledger, authz authorizer.Authorizer, snapshotDir string) (admission.Interface, error) {
	plugins := admission.NewPlugins()
	Register(plugins)
	return plugins.NewFromPlugins(Names, noConfig{}, Initializer{Ledger: ledger, Authorizer: authz, SnapshotDir: snapshotDir}, nil)
}

type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }
