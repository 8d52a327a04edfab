package gitops

import (
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/crdtest"
)

// flux.yaml is what hack/flux/manifests generates (hack/update-flux-manifests.sh).
func fluxManifests(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("flux.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The objects the builders make are valid against Flux's own CRDs (those of the manifests a
// tenant gets, generated from Flux's modules): every field known, every value allowed.
func TestObjectsMatchFluxCRDs(t *testing.T) {
	set, err := crdtest.FromManifests("flux.yaml", fluxManifests(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []schema.GroupVersionKind{external.FluxGitRepositoryGVK, external.FluxKustomizationGVK} {
		if set.CRD(gvk.GroupKind()) == nil {
			t.Fatalf("flux.yaml lacks the CRD of %s", gvk)
		}
	}
	// The check has teeth: a field Flux does not have is refused.
	objs, _ := Build(cluster("https://github.com/example/public.git", "", "", ""), nil)
	objs.Kustomization.Object["spec"].(map[string]any)["targetRevision"] = "main"
	if errs := set.Validate(objs.Kustomization); len(errs) == 0 {
		t.Error("an unknown field passed")
	}
	for _, tc := range []struct{ url, branch, path, secret string }{
		{"https://git.example.com/team-a/fleet.git", "", "", "git-token"},
		{"ssh://git@git.example.com/team-a/fleet.git", "release/1.2", "./clusters/prod", "git-token"},
		{"https://github.com/example/public.git", "main", "clusters/prod", ""},
	} {
		objs, err := Build(cluster(tc.url, tc.branch, tc.path, tc.secret), secret(map[string]string{
			"username": "git", "password": "p", "identity": "KEY", "known_hosts": "HOSTS"}))
		if err != nil {
			t.Fatal(err)
		}
		if errs := set.Validate(objs.GitRepository); len(errs) > 0 {
			t.Errorf("%s: GitRepository: %v", tc.url, errs)
		}
		if errs := set.Validate(objs.Kustomization); len(errs) > 0 {
			t.Errorf("%s: Kustomization: %v", tc.url, errs)
		}
	}
}

// The manifests run the images hack builds (never pulled), at the versions the header pins, and
// name no controller that is not installed in an argument.
func TestFluxManifests(t *testing.T) {
	data := string(fluxManifests(t))
	for _, want := range []string{
		"image: localhost/butler-flux-source-controller:v1.9.5",
		"image: localhost/butler-flux-kustomize-controller:v1.9.5",
		"github.com/fluxcd/source-controller@v1.9.5, github.com/fluxcd/kustomize-controller@v1.9.5",
	} {
		if !strings.Contains(data, want) {
			t.Errorf("flux.yaml lacks %q", want)
		}
	}
	if n := strings.Count(data, "\n        image: "); n != 2 {
		t.Errorf("%d images, want 2", n)
	}
	if strings.Contains(data, "--events-addr") || strings.Contains(data, "ghcr.io") {
		t.Error("flux.yaml names the notification-controller's address or a pulled image")
	}
}

// What the step installs: flux.yaml with flux-system protected, first (the namespace of the
// rest), then the ServiceAccount the Kustomization applies as, bound to cluster-admin.
func TestInstall(t *testing.T) {
	objs, err := Install()
	if err != nil {
		t.Fatal(err)
	}
	if ns := objs[0]; ns.GetKind() != "Namespace" || ns.GetName() != Namespace || ns.GetLabels()[external.ProtectedNamespaceLabel] != "true" {
		t.Errorf("first object %s %s labels %v, want flux-system protected", objs[0].GetKind(), objs[0].GetName(), objs[0].GetLabels())
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	if kinds["CustomResourceDefinition"] != 7 || kinds["Deployment"] != len(Controllers) {
		t.Errorf("kinds %v, want 7 CRDs and %d Deployments", kinds, len(Controllers))
	}
	sa, crb := objs[len(objs)-2], objs[len(objs)-1]
	if sa.GetKind() != "ServiceAccount" || sa.GetName() != Name || sa.GetNamespace() != Namespace {
		t.Errorf("ServiceAccount %s %s/%s", sa.GetKind(), sa.GetNamespace(), sa.GetName())
	}
	if ref, _, _ := unstructured.NestedString(crb.Object, "roleRef", "name"); crb.GetKind() != "ClusterRoleBinding" || ref != "cluster-admin" {
		t.Errorf("%s to %s", crb.GetKind(), ref)
	}
}

// hack/build-flux-images.sh builds each controller at the version the wrapper module requires,
// and refuses one that is not the version flux.yaml runs: they must agree without a build.
func TestWrapperModulesRequireFluxYAMLsVersions(t *testing.T) {
	data := string(fluxManifests(t))
	mod, err := os.ReadFile("../../../../hack/flux/controllers/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Controllers {
		i := strings.Index(data, "image: localhost/butler-flux-"+c+":")
		if i < 0 {
			t.Fatalf("flux.yaml runs no image of %s", c)
		}
		version := strings.Fields(data[i+len("image: localhost/butler-flux-"+c+":"):])[0]
		if !strings.Contains(string(mod), "\tgithub.com/fluxcd/"+c+" "+version+"\n") {
			t.Errorf("hack/flux/controllers/go.mod does not require %s %s, which flux.yaml runs", c, version)
		}
	}
}
