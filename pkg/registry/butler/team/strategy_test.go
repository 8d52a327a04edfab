package team

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func TestSystemNamespacesAreNotTeams(t *testing.T) {
	for name, ok := range map[string]bool{"team-a": true, "kube-system": false, "kube-anything": false, "default": false, "butler-system": false} {
		errs := validateNew(&butler.Team{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if (len(errs) == 0) != ok {
			t.Errorf("%s: %v", name, errs)
		}
	}
}
