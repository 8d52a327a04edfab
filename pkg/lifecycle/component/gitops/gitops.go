// Package gitops builds what the GitOps step writes into a tenant for
// spec.addons.gitops.repository (docs/concepts/gitops.md): a Flux GitRepository and
// Kustomization in flux-system, each named Name, and the copy of the repository's credential,
// and reads their status back as one Sync. An object in, objects out: no client; the
// TenantCluster controller's GitOps step applies them (pkg/lifecycle/tenantcluster). flux.yaml is the
// manifests of Flux's two controllers a tenant gets (Install), generated from Flux's modules by
// hack/update-flux-manifests.sh, running the images hack/build-flux-images.sh builds; its CRDs
// (a tenant's, so not in artifacts/crds) are what the tests validate the objects against.
package gitops

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/flux"
)

const (
	// Namespace is Flux's namespace in the tenant, protected (no Team operator holds it).
	Namespace = "flux-system"
	// Name names the GitRepository, the Kustomization, the credential's copy and the
	// ServiceAccount the Kustomization applies as.
	Name = "butler-gitops"
	// DefaultBranch and DefaultPath stand for an unset branch and path.
	DefaultBranch = "main"
	DefaultPath   = "./"
)

// How often Flux looks: a commit is fetched within SourceInterval and applied at once (a new
// source revision triggers the Kustomization); ApplyInterval re-applies against drift.
const (
	SourceInterval = time.Minute
	SourceTimeout  = time.Minute
	ApplyInterval  = 10 * time.Minute
	ApplyRetry     = time.Minute
	ApplyTimeout   = 5 * time.Minute
)

// Objects are what the step applies for a repository, in order: the credential (nil without a
// secretRef), the source, the Kustomization.
type Objects struct {
	Credential    *corev1.Secret
	GitRepository *unstructured.Unstructured
	Kustomization *unstructured.Unstructured
}

// Build returns the objects for tc's repository; credential is the Secret its secretRef names,
// read from tc's namespace (nil when there is none; another Secret is an error). A *NotAdmittedError when admission did not
// decide the repository, a *CredentialError when the secretRef's Secret is missing or cannot
// serve the URL.
func Build(tc *v1alpha1.TenantCluster, credential *corev1.Secret) (*Objects, error) {
	repo := repository(tc)
	if repo == nil {
		return nil, fmt.Errorf("TenantCluster %s/%s has no spec.addons.gitops.repository", tc.Namespace, tc.Name)
	}
	if !admitted(tc, repo) {
		return nil, &NotAdmittedError{}
	}
	out := &Objects{}
	if repo.SecretRef != nil {
		if credential != nil && (credential.Namespace != tc.Namespace || credential.Name != repo.SecretRef.Name) {
			// The caller read another Secret than the local one named: copying it would hand
			// another Team's (or the platform's) credential to this tenant.
			return nil, fmt.Errorf("TenantCluster %s/%s names Secret %q in its namespace; given %s/%s",
				tc.Namespace, tc.Name, repo.SecretRef.Name, credential.Namespace, credential.Name)
		}
		copied, err := Credential(repo.URL, repo.SecretRef.Name, credential)
		if err != nil {
			return nil, err
		}
		out.Credential = copied
	}
	var err error
	if out.GitRepository, err = toUnstructured(gitRepository(repo, credential), external.FluxGitRepositoryGVK.Kind); err != nil {
		return nil, err
	}
	if out.Kustomization, err = toUnstructured(kustomization(repo), external.FluxKustomizationGVK.Kind); err != nil {
		return nil, err
	}
	return out, nil
}

// NotAdmittedError is a repository admission (GitOpsSource) did not decide: stored before the
// check existed, so nobody was asked whether its Secret may go to its URL.
type NotAdmittedError struct{}

func (*NotAdmittedError) Error() string {
	return "spec.addons.gitops.repository was stored before admission checked who may use its Secret and URL: " +
		"someone who may get the Secret writes the TenantCluster with the annotation " + v1alpha1.GitOpsSourcePinAnnotation + " (any value) to have it checked"
}

// admitted says whether tc's pin is admission's for repo.
func admitted(tc *v1alpha1.TenantCluster, repo *v1alpha1.GitRepository) bool {
	secret := ""
	if repo.SecretRef != nil {
		secret = repo.SecretRef.Name
	}
	return tc.Annotations[v1alpha1.GitOpsSourcePinAnnotation] == v1alpha1.GitOpsSourcePin(repo.URL, repo.Branch, repo.Path, secret)
}

func repository(tc *v1alpha1.TenantCluster) *v1alpha1.GitRepository {
	if g := tc.Spec.Addons.Gitops; g != nil {
		return g.Repository
	}
	return nil
}

// objectMeta is the name, namespace and label of every object of the step.
func objectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: Name, Namespace: Namespace, Labels: map[string]string{external.ManagedByLabel: external.ManagedBy}}
}

// ReconcileRequestedAnnotation is Flux's "fetch now" (what `flux reconcile` writes): a change of
// its value makes source-controller fetch at once rather than at its interval.
const ReconcileRequestedAnnotation = "reconcile.fluxcd.io/requestedAt"

// gitRepository is the source for repo; credential is the Secret its secretRef names. Flux reads
// a Secret only when it fetches, so a changed credential (fixed, rotated, another Secret) is asked
// for at once by the Secret's UID and resourceVersion in ReconcileRequestedAnnotation: nothing of
// its data, since Flux's view role lets tenant viewers read GitRepositories.
func gitRepository(repo *v1alpha1.GitRepository, credential *corev1.Secret) *flux.GitRepository {
	branch := repo.Branch
	if branch == "" {
		branch = DefaultBranch
	}
	obj := &flux.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: external.FluxGitRepositoryGVK.GroupVersion().String(), Kind: external.FluxGitRepositoryGVK.Kind},
		ObjectMeta: objectMeta(),
		Spec: flux.GitRepositorySpec{
			URL:       repo.URL,
			Interval:  metav1.Duration{Duration: Interval(repo)},
			Timeout:   &metav1.Duration{Duration: SourceTimeout},
			Reference: &flux.GitRepositoryRef{Branch: branch},
		},
	}
	if repo.SecretRef != nil {
		obj.Spec.SecretRef = &flux.LocalObjectReference{Name: Name}
	}
	if repo.SecretRef != nil && credential != nil {
		obj.Annotations = map[string]string{ReconcileRequestedAnnotation: "credential " + string(credential.UID) + "/" + credential.ResourceVersion}
	}
	return obj
}

// Interval is how often Flux fetches repo: its spec.interval, else SourceInterval.
func Interval(repo *v1alpha1.GitRepository) time.Duration {
	if repo.Interval != nil {
		return repo.Interval.Duration
	}
	return SourceInterval
}

func kustomization(repo *v1alpha1.GitRepository) *flux.Kustomization {
	path := repo.Path
	if path == "" {
		path = DefaultPath
	}
	return &flux.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: external.FluxKustomizationGVK.GroupVersion().String(), Kind: external.FluxKustomizationGVK.Kind},
		ObjectMeta: objectMeta(),
		Spec: flux.KustomizationSpec{
			SourceRef:          flux.CrossNamespaceSourceReference{Kind: external.FluxGitRepositoryGVK.Kind, Name: Name},
			Path:               path,
			Prune:              true,
			Wait:               true,
			Interval:           metav1.Duration{Duration: ApplyInterval},
			RetryInterval:      &metav1.Duration{Duration: ApplyRetry},
			Timeout:            &metav1.Duration{Duration: ApplyTimeout},
			ServiceAccountName: Name,
		},
	}
}

// toUnstructured converts a mirror for server-side apply, without the empty status and
// creationTimestamp the converter writes (an apply would claim them).
func toUnstructured(obj any, kind string) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", kind, err)
	}
	delete(m, "status")
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// Keys of a Git credential Secret that Flux reads (fluxcd/pkg/git's NewAuthOptions), by
// transport; any other key is not copied into the tenant.
var (
	sshKeys   = []string{"identity", "identity.pub", "known_hosts", "password"}
	httpsKeys = []string{"username", "password", "bearerToken", "ca.crt", "caFile", "tls.crt", "tls.key"}
)

// CredentialError is a credential the step cannot copy: missing, or without what the URL's
// transport needs. It names the Secret and its keys, never a value.
type CredentialError struct {
	Secret string
	Reason string
}

func (e *CredentialError) Error() string {
	return fmt.Sprintf("Secret %q for spec.addons.gitops.repository.secretRef: %s", e.Secret, e.Reason)
}

// Credential is the copy of src for the tenant: only the keys Flux reads for rawURL's transport,
// checked for what that transport needs, so that a broken credential is said by butler (naming
// the keys) rather than by a failing clone. A credential over plain http:// is refused: it would
// cross the network unencrypted.
func Credential(rawURL, name string, src *corev1.Secret) (*corev1.Secret, error) {
	if src == nil {
		return nil, &CredentialError{Secret: name, Reason: "not found in the TenantCluster's namespace"}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &CredentialError{Secret: name, Reason: "the repository URL does not parse"}
	}
	keys := httpsKeys
	if u.Scheme == "ssh" {
		keys = sshKeys
	}
	data := map[string][]byte{}
	for _, k := range keys {
		if v, ok := src.Data[k]; ok && len(v) > 0 {
			data[k] = v
		}
	}
	if why := credentialGap(u.Scheme, data); why != "" {
		return nil, &CredentialError{Secret: name, Reason: why}
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: objectMeta(),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}, nil
}

// credentialGap says what data lacks for the transport, or "".
func credentialGap(scheme string, data map[string][]byte) string {
	has := func(k string) bool { _, ok := data[k]; return ok }
	switch {
	case scheme == "ssh" && (!has("identity") || !has("known_hosts")):
		return "an ssh:// repository needs the keys identity and known_hosts"
	case scheme == "ssh":
		return ""
	case len(data) == 0:
		return "has none of the keys Flux reads for " + scheme + ":// (" + strings.Join(httpsKeys, ", ") + ")"
	case has("password") && !has("username"):
		return "password needs username"
	case has("tls.crt") != has("tls.key"):
		return "tls.crt and tls.key go together"
	case scheme == "http" && slices.ContainsFunc([]string{"password", "bearerToken", "tls.key"}, has):
		return "an http:// repository would receive the credential unencrypted: use https://"
	}
	return ""
}
