package gitops

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

func cluster(url, branch, path, secret string) *v1alpha1.TenantCluster {
	repo := &v1alpha1.GitRepository{URL: url, Branch: branch, Path: path}
	if secret != "" {
		repo.SecretRef = &v1alpha1.LocalObjectReference{Name: secret}
	}
	return &v1alpha1.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod", Annotations: map[string]string{
			v1alpha1.GitOpsSourcePinAnnotation: v1alpha1.GitOpsSourcePin(url, branch, path, secret)}},
		Spec: v1alpha1.TenantClusterSpec{Addons: v1alpha1.AddonsSpec{Gitops: &v1alpha1.GitOpsAddon{Repository: repo}}},
	}
}

// The attack: a repository admission never decided (stored before GitOpsSource, or pinned for
// another repository) would send its Secret where an operator pointed it; Build refuses it.
func TestAttackBuildOfARepositoryNotAdmitted(t *testing.T) {
	token := secret(map[string]string{"username": "git", "password": "s3cret"})
	unpinned := cluster("https://git.attacker.example/x.git", "", "", "git-token")
	delete(unpinned.Annotations, v1alpha1.GitOpsSourcePinAnnotation)
	other := cluster("https://git.attacker.example/x.git", "", "", "git-token")
	other.Annotations[v1alpha1.GitOpsSourcePinAnnotation] = v1alpha1.GitOpsSourcePin("https://git.example.com/fleet.git", "", "", "git-token")
	for name, tc := range map[string]*v1alpha1.TenantCluster{"unpinned": unpinned, "pinned for another repository": other} {
		var notAdmitted *NotAdmittedError
		if objs, err := Build(tc, token); !errors.As(err, &notAdmitted) || objs != nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: objects %v, %v; want none and a NotAdmittedError", name, objs != nil, err)
		}
	}
}

func secret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "git-token"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func field(t *testing.T, u *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !found {
		t.Fatalf("%s %v: found %v, %v", u.GetKind(), path, found, err)
	}
	return v
}

// The attack: a secretRef names a local Secret, but a step that read the wrong one (another
// Team's namespace, another name) would copy it into this tenant; Build copies only the Secret
// the cluster's secretRef names in its own namespace.
func TestAttackBuildWithAnotherTeamsSecret(t *testing.T) {
	tc := cluster("https://git.example.com/team-a/fleet.git", "", "", "git-token")
	other := secret(map[string]string{"username": "git", "password": "s3cret"})
	other.Namespace = "team-b"
	renamed := secret(map[string]string{"username": "git", "password": "s3cret"})
	renamed.Name = "platform-token"
	for name, s := range map[string]*corev1.Secret{"another namespace": other, "another name": renamed} {
		if objs, err := Build(tc, s); err == nil || objs != nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: objects %v, %v; want none and an error", name, objs != nil, err)
		}
	}
}

// The objects carry the spec's repository as Flux's fields, with the defaults said in
// docs/concepts/gitops.md, and nothing an apply should not own (status, creationTimestamp).
func TestBuild(t *testing.T) {
	objs, err := Build(cluster("https://git.example.com/team-a/fleet.git", "", "", "git-token"), secret(map[string]string{"username": "git", "password": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	repo, ks := objs.GitRepository, objs.Kustomization
	for path, want := range map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata.name": Name, "metadata.namespace": Namespace,
		"spec.url": "https://git.example.com/team-a/fleet.git", "spec.ref.branch": "main",
		"spec.interval": "1m0s", "spec.timeout": "1m0s", "spec.secretRef.name": Name,
	} {
		if got := field(t, repo, strings.Split(path, ".")...); got != want {
			t.Errorf("GitRepository %s = %v, want %v", path, got, want)
		}
	}
	for path, want := range map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"spec.sourceRef.kind": "GitRepository", "spec.sourceRef.name": Name, "spec.path": "./",
		"spec.prune": true, "spec.wait": true, "spec.interval": "10m0s", "spec.retryInterval": "1m0s",
		"spec.timeout": "5m0s", "spec.serviceAccountName": Name,
	} {
		if got := field(t, ks, strings.Split(path, ".")...); got != want {
			t.Errorf("Kustomization %s = %v, want %v", path, got, want)
		}
	}
	for _, u := range []*unstructured.Unstructured{repo, ks} {
		if _, ok := u.Object["status"]; ok {
			t.Errorf("%s has a status", u.GetKind())
		}
		if _, ok := u.Object["metadata"].(map[string]any)["creationTimestamp"]; ok {
			t.Errorf("%s has a creationTimestamp", u.GetKind())
		}
	}
	if c := objs.Credential; c == nil || c.Name != Name || c.Namespace != Namespace || string(c.Data["password"]) != "s3cret" {
		t.Errorf("credential %+v", c)
	}

	objs, err = Build(cluster("https://github.com/example/public.git", "release/1.2", "./clusters/prod", ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if objs.Credential != nil || field(t, objs.GitRepository, "spec", "ref", "branch") != "release/1.2" ||
		field(t, objs.Kustomization, "spec", "path") != "./clusters/prod" {
		t.Errorf("without a credential: %+v", objs)
	}
	if _, found, _ := unstructured.NestedMap(objs.GitRepository.Object, "spec", "secretRef"); found {
		t.Error("a secretRef without a credential")
	}
}

// Flux reads the Secret only when it fetches: a changed credential (another resourceVersion,
// another Secret) changes the GitRepository's ReconcileRequestedAnnotation, so Flux fetches at
// once with it rather than at its interval; the value carries nothing of the Secret's data (Flux's
// view role lets tenant viewers read GitRepositories), and the same Secret gives the same value.
func TestBuildAsksForAFetchWhenTheCredentialChanges(t *testing.T) {
	tc := cluster("https://git.example.com/team-a/fleet.git", "", "", "git-token")
	requested := func(uid, rv, password string) string {
		t.Helper()
		s := secret(map[string]string{"username": "git", "password": password})
		s.UID, s.ResourceVersion = types.UID(uid), rv
		objs, err := Build(tc, s)
		if err != nil {
			t.Fatal(err)
		}
		v := objs.GitRepository.GetAnnotations()[ReconcileRequestedAnnotation]
		if v == "" || strings.Contains(v, password) || strings.Contains(v, "git:") {
			t.Fatalf("%s = %q: want a value naming the Secret's version, nothing of its data", ReconcileRequestedAnnotation, v)
		}
		return v
	}
	first := requested("u1", "10", "s3cret")
	if again := requested("u1", "10", "s3cret"); again != first {
		t.Errorf("the same Secret asked for another fetch: %q, then %q", first, again)
	}
	if rotated := requested("u1", "11", "r0tated"); rotated == first {
		t.Errorf("a rotated Secret (resourceVersion 10 -> 11) asked for no fetch: %q", rotated)
	}
	if other := requested("u2", "10", "s3cret"); other == first {
		t.Errorf("another Secret of the same name asked for no fetch: %q", other)
	}
	objs, err := Build(cluster("https://github.com/example/public.git", "", "", ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := objs.GitRepository.GetAnnotations()[ReconcileRequestedAnnotation]; ok {
		t.Error("a repository without a credential asks for fetches")
	}
}

// Only the keys Flux reads for the URL's transport reach the tenant; a credential that cannot
// serve the URL is said by name and keys, never by value.
func TestCredential(t *testing.T) {
	all := map[string]string{"username": "git", "password": "s3cret", "identity": "KEY", "known_hosts": "HOSTS", "kubeconfig": "ADMIN", "note": "x"}
	c, err := Credential("https://git.example.com/fleet.git", "git-token", secret(all))
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(c.Data); !reflect.DeepEqual(got, []string{"password", "username"}) {
		t.Errorf("https keys copied: %v", got)
	}
	c, err = Credential("ssh://git@git.example.com/fleet.git", "git-token", secret(all))
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(c.Data); !reflect.DeepEqual(got, []string{"identity", "known_hosts", "password"}) {
		t.Errorf("ssh keys copied: %v", got)
	}

	for _, tc := range []struct {
		url  string
		data map[string]string
		want string
	}{
		{"ssh://git@git.example.com/fleet.git", map[string]string{"identity": "KEY"}, "needs the keys identity and known_hosts"},
		{"https://git.example.com/fleet.git", map[string]string{"token": "s3cret"}, "has none of the keys Flux reads for https://"},
		{"https://git.example.com/fleet.git", map[string]string{"password": "s3cret"}, "password needs username"},
		{"https://git.example.com/fleet.git", map[string]string{"tls.key": "s3cret"}, "tls.crt and tls.key go together"},
		{"http://git.example.com/fleet.git", map[string]string{"bearerToken": "s3cret"}, "would receive the credential unencrypted"},
	} {
		_, err := Credential(tc.url, "git-token", secret(tc.data))
		var ce *CredentialError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), `Secret "git-token"`) {
			t.Errorf("%s %v: %v, want a CredentialError saying %q", tc.url, keys(secret(tc.data).Data), err, tc.want)
		}
	}
	if _, err := Build(cluster("https://git.example.com/fleet.git", "", "", "gone"), nil); err == nil || !strings.Contains(err.Error(), `Secret "gone" for spec.addons.gitops.repository.secretRef: not found`) {
		t.Errorf("missing Secret: %v", err)
	}
	// A CA alone (a private server, no login) is a credential.
	if _, err := Credential("https://git.example.com/fleet.git", "ca", secret(map[string]string{"ca.crt": "CA"})); err != nil {
		t.Errorf("a CA alone: %v", err)
	}
}

func keys(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }
