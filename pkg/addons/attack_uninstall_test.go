package addons

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/kube"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/yaml"
)

// buildingKube is Helm's fake kube client that builds the objects of a manifest (the fake builds
// none, so no gate would see them) and records what it creates.
type buildingKube struct {
	*kubefake.FailingKubeClient
	mu      sync.Mutex
	created []string
}

func (k *buildingKube) Build(r io.Reader, _ bool) (kube.ResourceList, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var list kube.ResourceList
	for _, doc := range strings.Split(string(data), "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			list = append(list, &resource.Info{Object: u, Name: u.GetName(), Namespace: u.GetNamespace()})
		}
	}
	return list, nil
}

func (k *buildingKube) Create(resources kube.ResourceList) (*kube.Result, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range resources {
		k.created = append(k.created, r.Object.GetObjectKind().GroupVersionKind().Kind+" "+r.Name)
	}
	return &kube.Result{Created: resources}, nil
}

// TestAttackUninstallOfAReleaseRecordedBeforeTheLabel: a Team's chart installed by an older
// butler has a pre-delete hook binding cluster-admin, and its release carries no
// RestrictedLabel (recorded before it existed). Its uninstall ran the hook ungated (shown with
// no restriction, what the controller asked before); now the controller passes the addon's
// restriction, and the hook is refused before it is created.
func TestAttackUninstallOfAReleaseRecordedBeforeTheLabel(t *testing.T) {
	for _, c := range []struct {
		restriction string
		refused     bool
	}{{"", false}, {"a chart from a repository (not a platform AddonDefinition)", true}} {
		e, target, _, releases := unitEngine(t)
		k := &buildingKube{FailingKubeClient: &kubefake.FailingKubeClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}}}
		e.configs[configKey{"unit", "apps"}].cfg.KubeClient = k
		hook := &release.Hook{Name: "crb", Kind: "ClusterRoleBinding", Path: "attack/templates/hook.yaml", Manifest: clusterAdminBinding,
			Events: []release.HookEvent{release.HookPreDelete}, DeletePolicies: []release.HookDeletePolicy{release.HookSucceeded}}
		old := &release.Release{Name: "old", Namespace: "apps", Version: 1, Labels: map[string]string{OwnerLabel: "uid-1"},
			Info:     &release.Info{Status: release.StatusDeployed},
			Chart:    &chart.Chart{Metadata: &chart.Metadata{Name: "attack", Version: "0.1.0"}},
			Manifest: "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: apps}\n",
			Hooks:    []*release.Hook{hook}}
		if err := releases.Create(old); err != nil {
			t.Fatal(err)
		}
		err := e.Uninstall(context.Background(), target, ReleaseKey{Name: "old", Namespace: "apps"}, time.Minute, c.restriction)
		hookCreated := strings.Contains(strings.Join(k.created, ","), "ClusterRoleBinding crb")
		switch {
		case c.refused && (err == nil || !strings.Contains(err.Error(), "ClusterRoleBinding crb binds ClusterRole cluster-admin") || hookCreated):
			t.Errorf("restricted uninstall: %v; created %v; want the hook refused, not created", err, k.created)
		case !c.refused && (err != nil || !hookCreated):
			t.Errorf("unrestricted uninstall (the hole before): %v; created %v; want the hook created", err, k.created)
		}
	}
}
