// Package team holds the registry strategy and kubectl columns of teams.
package team

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of teams.
type Strategy = resource.Strategy[*butler.Team, butler.TeamSpec, butler.TeamStatus]

// NewStrategy returns the strategy of teams.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    false,
		HasStatus:     true,
		Parts: func(obj *butler.Team) (*butler.TeamSpec, *butler.TeamStatus) {
			return &obj.Spec, &obj.Status
		},
		ValidateNew:          validation.ValidateTeam,
		ValidateChange:       validation.ValidateTeamUpdate,
		ValidateStatusChange: validation.ValidateTeamStatusUpdate,
	}
}
