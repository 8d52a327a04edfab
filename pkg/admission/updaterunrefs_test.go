package admission

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// An UpdateRun naming a strategy that does not exist, or a version the catalog does not offer,
// is a 422 naming the field at create.
func TestUpdateRunRefsAreCheckedAtCreate(t *testing.T) {
	s := newStore()
	s.config.Spec.KubernetesVersions = []butler.OfferedVersion{{Version: "v1.30.1"}, {Version: "v1.30.2"}}
	s.strategies = map[string]*butler.UpdateStrategy{"team-a/rings": {ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rings"}}}
	res := butler.Resource("updateruns").WithVersion("v1alpha1")
	create := func(strategy, version string) error {
		run := &butler.UpdateRun{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "r"},
			Spec: butler.UpdateRunSpec{StrategyRef: butler.LocalObjectReference{Name: strategy}, Target: butler.UpdateTarget{KubernetesVersion: version}}}
		return validate(t, s, attrs(run, nil, "team-a", "r", res, "", admission.Create, false))
	}
	if err := create("rings", "v1.30.2"); err != nil {
		t.Errorf("a run of an existing strategy to an offered version: %v", err)
	}
	for _, c := range []struct {
		err        error
		field, say string
	}{
		{create("nope", "v1.30.2"), "spec.strategyRef.name", `no UpdateStrategy "nope" in namespace "team-a"`},
		{create("rings", "v1.99.0"), "spec.target.kubernetesVersion", "does not offer it"},
	} {
		if !apierrors.IsInvalid(c.err) || !strings.Contains(c.err.Error(), c.field) || !strings.Contains(c.err.Error(), c.say) {
			t.Errorf("got %v, want a 422 on %s saying %q", c.err, c.field, c.say)
		}
	}
}
