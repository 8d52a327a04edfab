package admission

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// GitOpsSource decides, when a TenantCluster's spec.addons.gitops.repository is set or changed,
// whether its source may be used. Flux applies what the repository holds as the tenant's
// cluster-admin, so choosing it is the Team admin's: the asker holds create on
// tenantclusters/gitops (GitOpsSubresource, which only butler-admin grants; 403 naming it), or a
// Team operator would make themselves cluster-admin in the tenant. The credential (secretRef) is copied into the tenant and sent
// by Flux to the URL, so whoever sets or redirects it must be allowed to get that Secret
// themselves (a SubjectAccessReview through the server's authorizer; 403 otherwise, the same
// words whether it exists or not): a Team operator holds no right on Secrets and must not send
// their admin's token to a server of theirs. The URL must not name an address the outbound fetch
// policy refuses (a loopback, private or other internal address written in the URL, or
// localhost) unless the platform allows its host:port (422 at the url); a name resolving to such
// an address is refused where the fetch is dialled, as every fetch is. What it decided is
// pinned (Admit), and the GitOps step uses only a pinned repository.
type GitOpsSource struct {
	base
	authorizer authorizer.Authorizer
	fetch      addons.FetchPolicy
}

var (
	_ admission.MutationInterface   = &GitOpsSource{}
	_ admission.ValidationInterface = &GitOpsSource{}
	_ initializer.WantsAuthorizer   = &GitOpsSource{}
	_ WantsFetchPolicy              = &GitOpsSource{}
)

// WantsFetchPolicy is a plugin that checks URLs against the outbound fetch policy.
type WantsFetchPolicy interface{ SetFetchPolicy(addons.FetchPolicy) }

// NewGitOpsSource returns the plugin.
func NewGitOpsSource() *GitOpsSource {
	return &GitOpsSource{base: base{Handler: admission.NewHandler(admission.Create, admission.Update)}}
}

// SetAuthorizer implements initializer.WantsAuthorizer.
func (p *GitOpsSource) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

// SetFetchPolicy implements WantsFetchPolicy.
func (p *GitOpsSource) SetFetchPolicy(f addons.FetchPolicy) { p.fetch = f }

// repositoryToDecide is the repository of a TenantCluster request that sets or changes it; nil
// for any other request (an unchanged repository was decided when it was set).
func repositoryToDecide(a admission.Attributes) *butler.GitRepository {
	if a.GetResource().GroupResource() != tenantClusters || a.GetSubresource() != "" {
		return nil
	}
	tc, ok := a.GetObject().(*butler.TenantCluster)
	if !ok || tc.Spec.Addons.Gitops == nil || tc.Spec.Addons.Gitops.Repository == nil {
		return nil
	}
	repo := tc.Spec.Addons.Gitops.Repository
	if old, ok := a.GetOldObject().(*butler.TenantCluster); ok && old != nil && old.Spec.Addons.Gitops != nil &&
		reflect.DeepEqual(old.Spec.Addons.Gitops.Repository, repo) {
		return nil
	}
	return repo
}

// Admit implements admission.MutationInterface: it pins the repository admission decides
// (v1alpha1.GitOpsSourcePinAnnotation), the only one the controller uses, whatever a client sent.
// A set or changed repository is pinned (Validate decides it); an unchanged one keeps a stored
// pin that matches it. An unchanged repository without one was stored before this check: it is
// pinned only when the client asks, by sending the annotation, and then decided as if set, so
// that the Team's operators (and the controllers) still write the cluster while it waits for one
// who may use its Secret.
func (p *GitOpsSource) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	tc, ok := a.GetObject().(*butler.TenantCluster)
	if !ok || a.GetResource().GroupResource() != tenantClusters || a.GetSubresource() != "" {
		return nil
	}
	annotations := tc.GetAnnotations()
	_, asked := annotations[v1alpha1.GitOpsSourcePinAnnotation]
	delete(annotations, v1alpha1.GitOpsSourcePinAnnotation)
	if g := tc.Spec.Addons.Gitops; g != nil && g.Repository != nil {
		if want := sourcePin(g.Repository); asked || storedSourcePin(a) == want || repositoryToDecide(a) != nil {
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[v1alpha1.GitOpsSourcePinAnnotation] = want
		}
	}
	tc.SetAnnotations(annotations)
	return nil
}

func sourcePin(repo *butler.GitRepository) string {
	secret := ""
	if repo.SecretRef != nil {
		secret = repo.SecretRef.Name
	}
	return v1alpha1.GitOpsSourcePin(repo.URL, repo.Branch, repo.Path, secret)
}

// storedSourcePin is the pin of the TenantCluster as stored ("" on a create).
func storedSourcePin(a admission.Attributes) string {
	if old, ok := a.GetOldObject().(*butler.TenantCluster); ok && old != nil {
		return old.Annotations[v1alpha1.GitOpsSourcePinAnnotation]
	}
	return ""
}

// repositoryPinnedAnew is the repository of a TenantCluster request that pins it when the
// stored cluster had no pin for it (Admit, asked to); nil otherwise.
func repositoryPinnedAnew(a admission.Attributes) *butler.GitRepository {
	tc, ok := a.GetObject().(*butler.TenantCluster)
	if !ok || a.GetResource().GroupResource() != tenantClusters || a.GetSubresource() != "" ||
		tc.Spec.Addons.Gitops == nil || tc.Spec.Addons.Gitops.Repository == nil {
		return nil
	}
	if pin := tc.Annotations[v1alpha1.GitOpsSourcePinAnnotation]; pin == "" || pin == storedSourcePin(a) {
		return nil
	}
	return tc.Spec.Addons.Gitops.Repository
}

// Validate implements admission.ValidationInterface.
func (p *GitOpsSource) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	repo := repositoryToDecide(a)
	if repo == nil {
		repo = repositoryPinnedAnew(a)
	}
	if repo == nil {
		return nil
	}
	if !p.mayChooseRepository(ctx, a) {
		return admission.NewForbidden(a, fmt.Errorf(
			"spec.addons.gitops.repository: setting or changing it needs create on tenantclusters/%s in namespace %s (Flux applies what the repository holds as the tenant's cluster-admin; only the Team's admin role grants it), which you do not have",
			GitOpsSubresource, a.GetNamespace()))
	}
	if ref := repo.SecretRef; ref != nil && !p.mayGetSecret(ctx, a, ref.Name) {
		return admission.NewForbidden(a, fmt.Errorf(
			"spec.addons.gitops.repository.secretRef: using Secret %q needs get on it in namespace %s (its contents are sent to the repository's URL), which you do not have",
			ref.Name, a.GetNamespace()))
	}
	if why := p.fetch.RefusedURL(repo.URL); why != "" {
		path := field.NewPath("spec", "addons", "gitops", "repository", "url")
		return apierrors.NewInvalid(tenantClusterKind, a.GetName(), field.ErrorList{field.Invalid(path, repo.URL, why)})
	}
	return nil
}

// mayChooseRepository says whether the asker holds create on tenantclusters/gitops in the
// request's namespace. Without an authorizer (no management cluster) they may.
func (p *GitOpsSource) mayChooseRepository(ctx context.Context, a admission.Attributes) bool {
	if p.authorizer == nil {
		return true
	}
	return authorize(ctx, p.authorizer, a, authorizer.AttributesRecord{Verb: "create", Namespace: a.GetNamespace(),
		APIGroup: butler.GroupName, Resource: "tenantclusters", Subresource: GitOpsSubresource, Name: a.GetName()})
}

// mayGetSecret says whether the asker may get the Secret name in the request's namespace.
// Without an authorizer (no management cluster, where every request is the admin's) they may.
func (p *GitOpsSource) mayGetSecret(ctx context.Context, a admission.Attributes, name string) bool {
	if p.authorizer == nil {
		return true
	}
	return authorize(ctx, p.authorizer, a, authorizer.AttributesRecord{
		Verb: "get", Namespace: a.GetNamespace(), APIGroup: "", Resource: "secrets", Name: name})
}

// GitOpsSubresource names the verb create on tenantclusters/gitops, checked whenever
// spec.addons.gitops.repository is set or changed. It is an RBAC rule only: nothing serves it.
const GitOpsSubresource = "gitops"
