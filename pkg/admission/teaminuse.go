package admission

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
)

// TeamInUse refuses to delete a Team whose namespace still holds TenantClusters, with a 409
// naming them. (The Team controller checks again before it removes the namespace, for a cluster
// created in the moment between this check and the Team's deletion.)
type TeamInUse struct{ base }

var _ admission.ValidationInterface = &TeamInUse{}

// NewTeamInUse returns the plugin.
func NewTeamInUse() *TeamInUse {
	return &TeamInUse{base{Handler: admission.NewHandler(admission.Delete)}}
}

// maxNamed bounds how many clusters the error lists.
const maxNamed = 10

// Validate implements admission.ValidationInterface.
func (p *TeamInUse) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != teams || a.GetSubresource() != "" {
		return nil
	}
	clusters, err := p.store().Clusters(ctx, a.GetName(), "")
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(clusters) == 0 {
		return nil
	}
	var names []string
	for i, tc := range clusters {
		if i == maxNamed {
			names = append(names, fmt.Sprintf("and %d more", len(clusters)-maxNamed))
			break
		}
		names = append(names, tc.Namespace+"/"+tc.Name)
	}
	return apierrors.NewConflict(teams, a.GetName(), fmt.Errorf(
		"the team still has %d tenant cluster(s): %s; delete them first", len(clusters), strings.Join(names, ", ")))
}
