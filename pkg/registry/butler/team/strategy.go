// Package team holds the registry strategy and kubectl columns of teams.
package team

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
		ValidateNew:          validateNew,
		ValidateChange:       validation.ValidateTeamUpdate,
		ValidateStatusChange: validation.ValidateTeamStatusUpdate,
	}
}

// reservedNames are namespaces a Team may not take over: its namespace has its name.
var reservedNames = sets.New("default", "kube-system", "kube-public", "kube-node-lease", "butler-system")

func validateNew(obj *butler.Team) field.ErrorList {
	allErrs := validation.ValidateTeam(obj)
	if reservedNames.Has(obj.Name) || strings.HasPrefix(obj.Name, "kube-") {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("metadata", "name"),
			fmt.Sprintf("%q is a system namespace; a Team's namespace has the Team's name", obj.Name)))
	}
	return allErrs
}
