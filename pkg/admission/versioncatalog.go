package admission

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/clock"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/maintenance"
)

// VersionCatalog refuses, with a 422 on spec.kubernetesVersion, a TenantCluster asking for a
// Kubernetes version the platform's catalog (ButlerConfig's kubernetesVersions) does not offer
// or has expired: on create, and on an update that changes the version. A cluster keeps a
// version the catalog dropped or expired until it is changed (maintenance updates an expired
// one). Without a catalog every version passes, as before the catalog.
type VersionCatalog struct {
	base
	clock clock.PassiveClock
}

var _ admission.ValidationInterface = &VersionCatalog{}

// NewVersionCatalog returns the plugin.
func NewVersionCatalog() *VersionCatalog {
	return &VersionCatalog{base: base{Handler: admission.NewHandler(admission.Create, admission.Update)}, clock: clock.RealClock{}}
}

// Validate implements admission.ValidationInterface.
func (p *VersionCatalog) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != tenantClusters || a.GetSubresource() != "" {
		return nil
	}
	tc, ok := a.GetObject().(*butler.TenantCluster)
	if !ok {
		return nil
	}
	if old, ok := a.GetOldObject().(*butler.TenantCluster); ok && old.Spec.KubernetesVersion == tc.Spec.KubernetesVersion {
		return nil
	}
	config, err := p.store().Config(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if msg := catalogRefusal(CatalogOf(config), tc.Spec.KubernetesVersion, p.clock); msg != "" {
		errs := field.ErrorList{field.Invalid(field.NewPath("spec", "kubernetesVersion"), tc.Spec.KubernetesVersion, msg)}
		return apierrors.NewInvalid(schema.GroupKind{Group: butler.GroupName, Kind: "TenantCluster"}, a.GetName(), errs)
	}
	return nil
}

// catalogRefusal says why the catalog refuses version, or "".
func catalogRefusal(c maintenance.Catalog, version string, clk clock.PassiveClock) string {
	if len(c) == 0 {
		return ""
	}
	now := clk.Now()
	offered := strings.Join(c.Versions(now), ", ")
	offer, ok := c.Find(version)
	switch {
	case !ok:
		return fmt.Sprintf("the platform's version catalog (ButlerConfig spec.kubernetesVersions) does not offer it; offered: [%s]", offered)
	case offer.Expired(now):
		return fmt.Sprintf("expired on %s in the platform's version catalog; offered: [%s]", offer.Expires.UTC().Format("2006-01-02"), offered)
	}
	return ""
}

// CatalogOf is ButlerConfig's version catalog (empty without a ButlerConfig).
func CatalogOf(config *butler.ButlerConfig) maintenance.Catalog {
	if config == nil {
		return nil
	}
	out := make(maintenance.Catalog, 0, len(config.Spec.KubernetesVersions))
	for _, v := range config.Spec.KubernetesVersions {
		out = append(out, maintenance.NewOffer(v.Version, v.ExpirationDate))
	}
	return out
}
