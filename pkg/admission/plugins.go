// Package admission holds butler-apiserver's own admission plugins:
//
//   - butler.butlerlabs.dev/MultiTenancy: ButlerConfig's multiTenancy.mode. In Enforced mode a
//     TenantCluster must live in a Team's namespace and its teamRef, if set, must name that Team.
//   - butler.butlerlabs.dev/TeamLimits: a Team's resourceLimits (ButlerConfig's
//     defaultTeamLimits where the Team sets none) on TenantCluster create and update,
//     tenantclusters/scale and TenantAddon create and update; aggregate limits go through the
//     quota Ledger, so concurrent requests cannot pass a limit together, and a cluster's delete
//     frees its share at once.
//   - butler.butlerlabs.dev/TeamInUse: a Team whose namespace holds TenantClusters cannot be deleted.
//   - butler.butlerlabs.dev/ProviderSupport: a TenantCluster's machine OS must be one that can
//     boot on its ProviderConfig's provider (a 422 with the reason otherwise).
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

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// Plugin names.
const (
	MultiTenancyName    = "butler.butlerlabs.dev/MultiTenancy"
	TeamLimitsName      = "butler.butlerlabs.dev/TeamLimits"
	TeamInUseName       = "butler.butlerlabs.dev/TeamInUse"
	ProviderSupportName = "butler.butlerlabs.dev/ProviderSupport"
)

// Names are the plugins in the order they run.
var Names = []string{MultiTenancyName, ProviderSupportName, TeamLimitsName, TeamInUseName}

// Register registers the plugins.
func Register(plugins *admission.Plugins) {
	plugins.Register(MultiTenancyName, func(io.Reader) (admission.Interface, error) { return NewMultiTenancy(), nil })
	plugins.Register(TeamLimitsName, func(io.Reader) (admission.Interface, error) { return NewTeamLimits(), nil })
	plugins.Register(TeamInUseName, func(io.Reader) (admission.Interface, error) { return NewTeamInUse(), nil })
	plugins.Register(ProviderSupportName, func(io.Reader) (admission.Interface, error) { return NewProviderSupport(), nil })
}

// WantsLedger is a plugin that reads butler objects through the quota Ledger's Store.
type WantsLedger interface {
	SetLedger(*quota.Ledger)
	admission.InitializationValidator
}

// Initializer hands the Ledger to the plugins.
type Initializer struct{ Ledger *quota.Ledger }

// Initialize implements admission.PluginInitializer.
func (i Initializer) Initialize(p admission.Interface) {
	if w, ok := p.(WantsLedger); ok {
		w.SetLedger(i.Ledger)
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

var (
	tenantClusters = butler.Resource("tenantclusters")
	tenantAddons   = butler.Resource("tenantaddons")
	teams          = butler.Resource("teams")
)

// New returns the plugins, initialized, in order: for a server without a management cluster,
// where the generic admission chain (which needs one) does not run.
func New(ledger *quota.Ledger) (admission.Interface, error) {
	plugins := admission.NewPlugins()
	Register(plugins)
	return plugins.NewFromPlugins(Names, noConfig{}, Initializer{Ledger: ledger}, nil)
}

type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }
