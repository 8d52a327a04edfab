package team

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// KeepReservations wraps the main resource's strategy so that no client writes the quota
// Ledger's reservations annotation: a create drops it, an update keeps the stored value.
// (The Ledger writes it directly to storage, past this strategy.)
type KeepReservations struct {
	Strategy
}

var (
	_ rest.RESTCreateStrategy = KeepReservations{}
	_ rest.RESTUpdateStrategy = KeepReservations{}
)

// PrepareForCreate drops a client-sent reservations annotation.
func (s KeepReservations) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	s.Strategy.PrepareForCreate(ctx, obj)
	delete(obj.(*butler.Team).Annotations, quota.ReservationsAnnotation)
}

// PrepareForUpdate keeps the stored reservations annotation.
func (s KeepReservations) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	s.Strategy.PrepareForUpdate(ctx, obj, old)
	newTeam, oldTeam := obj.(*butler.Team), old.(*butler.Team)
	if v, ok := oldTeam.Annotations[quota.ReservationsAnnotation]; ok {
		if newTeam.Annotations == nil {
			newTeam.Annotations = map[string]string{}
		}
		newTeam.Annotations[quota.ReservationsAnnotation] = v
	} else {
		delete(newTeam.Annotations, quota.ReservationsAnnotation)
	}
}
