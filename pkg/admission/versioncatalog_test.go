package admission

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// A version the catalog does not offer (v1.99.0: accepted before the catalog, then Provisioning
// for ever) or has expired is a 422 on spec.kubernetesVersion, at create and when it changes; a
// cluster keeps a version that expired under it; without a catalog every version passes.
func TestVersionCatalogRefusesVersionsNotOffered(t *testing.T) {
	s := newStore()
	expired := metav1.NewTime(time.Now().Add(-time.Hour))
	s.config.Spec.KubernetesVersions = []butler.OfferedVersion{{Version: "v1.31.4"}, {Version: "v1.31.5"}, {Version: "v1.30.1", ExpirationDate: &expired}}
	withVersion := func(v string) *butler.TenantCluster {
		c := tc("team-a", "two", 1)
		c.Spec.KubernetesVersion = v
		return c
	}
	create := func(v string) error {
		return validate(t, s, attrs(withVersion(v), nil, "team-a", "two", tcResource, "", admission.Create, false))
	}
	update := func(from, to string) error {
		return validate(t, s, attrs(withVersion(to), withVersion(from), "team-a", "two", tcResource, "", admission.Update, false))
	}
	for _, c := range []struct {
		name string
		err  error
		want string // "" = allowed
	}{
		{"create at an offered version", create("v1.31.4"), ""},
		{"create at v1.99.0", create("v1.99.0"), "does not offer it; offered: [v1.31.4, v1.31.5]"},
		{"create at an expired version", create("v1.30.1"), "expired on"},
		{"upgrade to an offered patch", update("v1.31.4", "v1.31.5"), ""},
		{"upgrade to a version not offered", update("v1.31.4", "v1.32.0"), "does not offer it"},
		{"a cluster keeps its expired version", update("v1.30.1", "v1.30.1"), ""},
	} {
		switch {
		case c.want == "" && c.err != nil:
			t.Errorf("%s: refused: %v", c.name, c.err)
		case c.want != "" && (!apierrors.IsInvalid(c.err) || !strings.Contains(c.err.Error(), "spec.kubernetesVersion") || !strings.Contains(c.err.Error(), c.want)):
			t.Errorf("%s: %v, want a 422 on spec.kubernetesVersion saying %q", c.name, c.err, c.want)
		}
	}
	s.config.Spec.KubernetesVersions = nil
	if err := create("v1.99.0"); err != nil {
		t.Errorf("without a catalog: %v", err)
	}
}
