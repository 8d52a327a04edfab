package admission

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// Which Teams may name a DataStore is on the DataStore (external.DataStoreTeamsAnnotation;
// without it no Team may: the platform places tenants there, or a platform admin names it). The
// DataStore is the platform's object, so its allow-list sits on it, where whoever may edit it
// decides, beside its max-tenants, and a remote Steward's DataStores carry it the same way.
const (
	DataStoreTeamsAnnotation      = external.DataStoreTeamsAnnotation
	DataStoreMaxTenantsAnnotation = external.DataStoreMaxTenantsAnnotation
)

// DataStoreGetter reads a DataStore from the management cluster; nil, nil when there is none.
type DataStoreGetter func(ctx context.Context, name string) (*unstructured.Unstructured, error)

// WantsDataStores is a plugin that reads DataStores.
type WantsDataStores interface{ SetDataStores(DataStoreGetter) }

// DataStoreUse decides, when a TenantCluster's spec.controlPlane.dataStoreRef is set or changed,
// whether it may name that DataStore: the DataStore exists and lists the cluster's Team in its
// annotation butler.butlerlabs.dev/teams (or "*"), or the asker may update the DataStore (a
// platform admin); and the DataStore is below its localprovider.butlerlabs.dev/max-tenants,
// counting every TenantCluster that names it or was placed on it. A 403 names the rule. Without
// a management cluster there are no DataStores to read, and nothing is checked.
type DataStoreUse struct {
	base
	authorizer authorizer.Authorizer
	dataStores DataStoreGetter
}

var (
	_ admission.ValidationInterface = &DataStoreUse{}
	_ initializer.WantsAuthorizer   = &DataStoreUse{}
	_ WantsDataStores               = &DataStoreUse{}
)

// NewDataStoreUse returns the plugin.
func NewDataStoreUse() *DataStoreUse {
	return &DataStoreUse{base: base{Handler: admission.NewHandler(admission.Create, admission.Update)}}
}

// SetAuthorizer implements initializer.WantsAuthorizer.
func (p *DataStoreUse) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

// SetDataStores implements WantsDataStores.
func (p *DataStoreUse) SetDataStores(g DataStoreGetter) { p.dataStores = g }

// Validate implements admission.ValidationInterface.
func (p *DataStoreUse) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != tenantClusters || a.GetSubresource() != "" || p.dataStores == nil {
		return nil
	}
	tc, ok := a.GetObject().(*butler.TenantCluster)
	if !ok || tc.Spec.ControlPlane.DataStoreRef == nil {
		return nil
	}
	name := tc.Spec.ControlPlane.DataStoreRef.Name
	if old, ok := a.GetOldObject().(*butler.TenantCluster); ok && old != nil && old.Spec.ControlPlane.DataStoreRef != nil &&
		old.Spec.ControlPlane.DataStoreRef.Name == name {
		return nil // decided when it was set
	}
	ds, err := p.dataStores(ctx, name)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if ds == nil {
		if p.mayUpdate(ctx, a, name) {
			return nil // a platform admin's, to come: the provider waits for it
		}
		return admission.NewForbidden(a, fmt.Errorf("spec.controlPlane.dataStoreRef: DataStore %q does not exist", name))
	}
	team, err := p.teamOf(ctx, a.GetNamespace())
	if err != nil {
		return err
	}
	if !teamListed(ds, team) && !p.mayUpdate(ctx, a, name) {
		who := "a cluster outside any Team"
		if team != nil {
			who = fmt.Sprintf("team %q", team.Name)
		}
		return admission.NewForbidden(a, fmt.Errorf("spec.controlPlane.dataStoreRef: DataStore %q is not offered to %s: its annotation %s lists the Teams that may name it (a platform admin decides)",
			name, who, DataStoreTeamsAnnotation))
	}
	return p.checkRoom(ctx, a, tc, ds)
}

// teamListed says whether the DataStore's annotation offers it to team.
func teamListed(ds *unstructured.Unstructured, team *butler.Team) bool {
	for _, t := range strings.Split(ds.GetAnnotations()[DataStoreTeamsAnnotation], ",") {
		t = strings.TrimSpace(t)
		if t == "*" || (team != nil && t == team.Name) {
			return true
		}
	}
	return false
}

// checkRoom refuses a cluster on a DataStore that holds its max-tenants already: the clusters
// that name it or were placed on it (status.dataStoreName), this one aside.
func (p *DataStoreUse) checkRoom(ctx context.Context, a admission.Attributes, tc *butler.TenantCluster, ds *unstructured.Unstructured) error {
	v := ds.GetAnnotations()[DataStoreMaxTenantsAnnotation]
	if v == "" {
		return nil
	}
	limit, err := strconv.Atoi(v)
	if err != nil || limit <= 0 {
		return nil // 0: no bound; a bad value is the provider's to report
	}
	clusters, err := p.store().Clusters(ctx, "", "")
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	on := 0
	for _, c := range clusters {
		if c.Namespace == tc.Namespace && c.Name == tc.Name {
			continue
		}
		if ref := c.Spec.ControlPlane.DataStoreRef; (ref != nil && ref.Name == ds.GetName()) || c.Status.DataStoreName == ds.GetName() {
			on++
		}
	}
	if on >= limit {
		return admission.NewForbidden(a, fmt.Errorf("spec.controlPlane.dataStoreRef: DataStore %q is full: it holds %d tenants, its %s is %d",
			ds.GetName(), on, DataStoreMaxTenantsAnnotation, limit))
	}
	return nil
}

// mayUpdate says whether the asker may update the DataStore: whoever may edit its allow-list
// may use it.
func (p *DataStoreUse) mayUpdate(ctx context.Context, a admission.Attributes, name string) bool {
	return p.authorizer != nil && authorize(ctx, p.authorizer, a,
		authorizer.AttributesRecord{Verb: "update", APIGroup: external.DataStoreGVK.Group, Resource: "datastores", Name: name})
}
