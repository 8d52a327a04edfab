package tenantcluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/addonslots"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/flux"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/gitops"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// ConditionGitOpsSynced says whether the tenant holds its repository's latest revision, and if
// not, why (gitops.Reason*). The GitOps step owns it but never holds Ready back: a repository is
// the Team's, and what it does says nothing of whether the cluster serves.
const ConditionGitOpsSynced = "GitOpsSynced"

// Reasons of ConditionGitOpsSynced the step adds to the builders'.
const (
	// ReasonCredentialNotReadable: butler-apiserver may not get the Secret secretRef names, as
	// it may read no Team's Secret unless granted that one by name.
	ReasonCredentialNotReadable = "CredentialNotReadable"
	// ReasonRemoving: the repository was removed; its objects in the tenant are going.
	ReasonRemoving = "Removing"
	// ReasonTenantUnreachable: the tenant's API server did not answer or refused a write.
	ReasonTenantUnreachable = "TenantUnreachable"
	// ReasonNamespaceNotProtected: flux-system exists in the tenant without the protected label;
	// nothing is installed until a tenant admin labels it (claimFluxNamespace).
	ReasonNamespaceNotProtected = "NamespaceNotProtected"
)

// How soon the step looks again: no watch reaches into a tenant, so a new commit's revision
// shows in the status within the repository's interval (gitops.Interval), at most
// gitopsProgressRecheck while Flux is on its way; gitopsResync is how often Flux's objects are
// applied again when nothing changed (a tenant admin may have edited them).
const (
	gitopsProgressRecheck = 15 * time.Second
	gitopsResync          = 10 * time.Minute
)

// gitopsOutcome is what the step found, for the status: the status and condition to set, or
// clear once the repository's objects are gone.
type gitopsOutcome struct {
	status    *v1alpha1.GitOpsStatus
	condition metav1.Condition
	clear     bool
}

// gitopsApplied remembers, per cluster UID, the digest of what the step last applied in the
// tenant and when, so a reconcile that changes nothing only reads Flux's status; and the tenant
// clients, kept while the admin kubeconfig Secret is unchanged.
type gitopsApplied struct {
	mu      sync.Mutex
	applied map[string]grant
	clients map[string]tenantObjects
}

type tenantObjects = keptClient[*objects]

// gitopsFlux is the repository the step installs Flux for: one of a gitops slot that names
// Flux (or no provider), whose slot makes no TenantAddon (addonslots.Slot.ByWorker).
func gitopsFlux(tc *v1alpha1.TenantCluster) *v1alpha1.GitRepository {
	g := tc.Spec.Addons.Gitops
	if g == nil || g.Repository == nil || (g.Provider != "" && g.Provider != addonslots.FluxCD) {
		return nil
	}
	return g.Repository
}

// ensureGitOps installs Flux in the tenant and points it at the cluster's repository, reads
// Flux's status into status.gitops and ConditionGitOpsSynced, and removes the repository's
// objects when the field goes. Always done: whatever the repository does is in the condition.
func (c *Controller) ensureGitOps(ctx context.Context, s *state) (steps.Result, error) {
	repo := gitopsFlux(s.tc)
	if repo == nil {
		return c.removeGitOps(ctx, s), nil
	}
	found := c.syncGitOps(ctx, s, repo)
	if found.status == nil {
		// Not read this time: the last revision stays, no longer known to be the latest.
		found.status = &v1alpha1.GitOpsStatus{}
		if prev := s.tc.Status.Gitops; prev != nil {
			found.status.Revision = prev.Revision
		}
	}
	s.gitops = &found
	switch found.condition.Reason {
	case gitops.ReasonProgressing, ReasonTenantUnreachable:
		s.recheckWithin(min(gitopsProgressRecheck, gitops.Interval(repo)))
	default: // in sync, or waiting for a commit or a person: a Secret, a grant, a pin
		s.recheckWithin(gitops.Interval(repo))
	}
	return steps.Ready("GitOps", "the repository's sync is in condition %s", ConditionGitOpsSynced), nil
}

// syncGitOps is the step for a repository: its status is nil when Flux's was not read.
func (c *Controller) syncGitOps(ctx context.Context, s *state, repo *v1alpha1.GitRepository) gitopsOutcome {
	if s.kubeconfigSecret == "" {
		return gitopsFalse(gitops.ReasonProgressing, "waiting for the control plane's admin kubeconfig")
	}
	credential, notReadable, err := c.gitopsCredential(ctx, s.tc, repo)
	if notReadable != "" {
		return gitopsFalse(ReasonCredentialNotReadable, "%s", notReadable)
	}
	if err != nil {
		return gitopsFalse(gitops.ReasonProgressing, "reading the repository's credential: %v", err)
	}
	objs, err := gitops.Build(s.tc, credential)
	var notAdmitted *gitops.NotAdmittedError
	var badCredential *gitops.CredentialError
	switch {
	case errors.As(err, &notAdmitted):
		return gitopsFalse(gitops.ReasonRepositoryNotAdmitted, "%v", err)
	case errors.As(err, &badCredential):
		return gitopsFalse(gitops.ReasonCredentialMissing, "%v", err)
	case err != nil:
		return gitopsFalse(gitops.ReasonCredentialMissing, "%v", err)
	}
	if why := c.fetch.RefusedResolved(ctx, repo.URL, c.lookup); why != "" {
		found := gitopsFalse(gitops.ReasonRepositoryRefused, "the outbound fetch policy refuses %s: %s", repo.URL, why)
		if err := c.withdrawSource(ctx, s); err != nil {
			found.condition.Message += fmt.Sprintf("; the GitRepository written before is not yet removed: %v", err)
		}
		return found
	}
	tenant, err := c.tenantObjectsOf(ctx, string(s.tc.UID), s.namespace, s.kubeconfigSecret)
	if err != nil {
		return gitopsFalse(ReasonTenantUnreachable, "%v", err)
	}
	install, err := gitops.Install()
	if err != nil {
		return gitopsFalse(gitops.ReasonProgressing, "%v", err)
	}
	if why, err := claimFluxNamespace(ctx, tenant, gitops.NamespaceOf(install)); err != nil || why != "" {
		if err != nil {
			return gitopsFalse(ReasonTenantUnreachable, "making %s in the tenant: %v", gitops.Namespace, err)
		}
		return gitopsFalse(ReasonNamespaceNotProtected, "%s", why)
	}
	if waiting, err := c.applyGitOps(ctx, string(s.tc.UID), tenant, install, objs); err != nil || waiting != "" {
		if err != nil {
			return gitopsFalse(ReasonTenantUnreachable, "applying Flux's objects in the tenant: %v", err)
		}
		return gitopsFalse(gitops.ReasonProgressing, "%s", waiting)
	}
	return readGitOps(ctx, tenant)
}

// claimFluxNamespace makes flux-system, labelled protected, unless it exists; one that exists
// must carry the label already. An unlabelled one is the Team operators' (they hold edit there):
// what they left in it, a Pod waiting for the butler-gitops ServiceAccount or a token of it,
// would run as cluster-admin and mount the credential once the step wrote them, and labelling
// it removes none of it. It is made with a create, not an apply, so one an operator makes
// meanwhile is not adopted. why says what waits, for a tenant admin.
func claimFluxNamespace(ctx context.Context, tenant *objects, ns *unstructured.Unstructured) (why string, err error) {
	existing, err := tenant.get(ctx, namespaceGVK, "", gitops.Namespace)
	switch {
	case err != nil:
		return "", err
	case existing != nil && access.Protected(gitops.Namespace, existing.GetLabels()):
		return "", nil
	case existing != nil:
		return notProtected, nil
	}
	r, err := tenant.resource(namespaceGVK, "")
	if err != nil {
		return "", err
	}
	_, err = r.Create(ctx, ns.DeepCopy(), external.Workers.CreateOptions())
	if apierrors.IsAlreadyExists(err) {
		return notProtected, nil
	}
	return "", err
}

var notProtected = fmt.Sprintf("namespace %s exists in the tenant without %s=true, so what the Team's operators put there would run as Flux's cluster-admin account and read the credential: "+
	"a tenant admin removes what should not run there and labels it (or deletes it)", gitops.Namespace, external.ProtectedNamespaceLabel)

// withdrawSource deletes the GitRepository the step wrote before, once the policy refuses what
// its host resolves to now (a name moved to an internal address): Flux would go on fetching it
// at every interval. The Kustomization stays, and what it applied. A cluster the step never
// wrote into is not touched.
func (c *Controller) withdrawSource(ctx context.Context, s *state) error {
	uid := string(s.tc.UID)
	c.gitopsState.mu.Lock()
	_, applied := c.gitopsState.applied[uid]
	delete(c.gitopsState.applied, uid)
	c.gitopsState.mu.Unlock()
	if !applied && s.tc.Status.Gitops == nil {
		return nil
	}
	tenant, err := c.tenantObjectsOf(ctx, uid, s.namespace, s.kubeconfigSecret)
	if err != nil {
		return err
	}
	_, err = tenant.remove(ctx, external.FluxGitRepositoryGVK, gitops.Namespace, gitops.Name)
	return err
}

func gitopsFalse(reason, format string, args ...any) gitopsOutcome {
	return gitopsOutcome{condition: metav1.Condition{Type: ConditionGitOpsSynced, Status: metav1.ConditionFalse,
		Reason: reason, Message: fmt.Sprintf(format, args...)}}
}

// gitopsCredential reads the Secret repo.secretRef names, in the cluster's own namespace only,
// live and as butler-apiserver: it may get a Team's Secret only when the Team's namespace admin
// granted it that one by name. notReadable says what to grant when it may not.
func (c *Controller) gitopsCredential(ctx context.Context, tc *v1alpha1.TenantCluster, repo *v1alpha1.GitRepository) (*corev1.Secret, string, error) {
	if repo.SecretRef == nil {
		return nil, "", nil
	}
	name := repo.SecretRef.Name
	secret, err := c.kube.CoreV1().Secrets(tc.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", nil // gitops.Build says it is missing
	case apierrors.IsForbidden(err):
		return nil, credentialGrant(tc.Namespace, name, c.self), nil
	case err != nil:
		return nil, "", err
	}
	return secret, "", nil
}

// credentialGrant is the condition's message for a credential butler-apiserver may not read:
// the two commands that grant it `get` on that one Secret.
func credentialGrant(namespace, secret, self string) string {
	subject := "--user=" + self
	if sa, ok := strings.CutPrefix(self, "system:serviceaccount:"); ok {
		subject = "--serviceaccount=" + sa
	}
	if self == "" {
		subject = "--serviceaccount=butler-system:butler-apiserver"
	}
	role := "butler-gitops-" + secret
	return fmt.Sprintf("butler-apiserver may not get Secret %q in %s: the namespace's admin grants it that one Secret: "+
		"kubectl -n %s create role %s --verb=get --resource=secrets --resource-name=%s; "+
		"kubectl -n %s create rolebinding %s --role=%s %s", secret, namespace, namespace, role, secret, namespace, role, role, subject)
}

// applyGitOps applies Flux and the repository's objects into the tenant, unless what it applied
// last is the same and was applied within gitopsResync. waiting says what it waits for.
func (c *Controller) applyGitOps(ctx context.Context, uid string, tenant *objects, install []*unstructured.Unstructured, objs *gitops.Objects) (string, error) {
	all := append(install, toApply(objs)...)
	sum := sha256.New()
	for _, o := range all {
		data, err := o.MarshalJSON()
		if err != nil {
			return "", err
		}
		sum.Write(data)
	}
	digest := fmt.Sprintf("%x", sum.Sum(nil))
	now := c.clock.Now()
	c.gitopsState.mu.Lock()
	last := c.gitopsState.applied[uid]
	c.gitopsState.mu.Unlock()
	if last.digest == digest && now.Sub(last.at) < gitopsResync {
		return "", nil
	}
	for _, o := range all {
		if _, err := tenant.apply(ctx, o); err != nil {
			var missing *NotInstalledError
			if errors.As(err, &missing) {
				// A Flux kind whose CRD was applied just now: served once it is established.
				tenant.mapper.Reset()
				return fmt.Sprintf("the tenant does not serve %s yet (its CRD was just applied)", missing.GVK.Kind), nil
			}
			return "", fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	c.gitopsState.mu.Lock()
	c.gitopsState.applied[uid] = grant{digest: digest, at: now}
	c.gitopsState.mu.Unlock()
	return "", nil
}

// toApply is the repository's objects as unstructured, in order.
func toApply(objs *gitops.Objects) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	if objs.Credential != nil {
		m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(objs.Credential)
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		out = append(out, u)
	}
	return append(out, objs.GitRepository, objs.Kustomization)
}

// readGitOps reads the GitRepository and Kustomization back into the status and condition.
func readGitOps(ctx context.Context, tenant *objects) gitopsOutcome {
	repoObj, err := tenant.get(ctx, external.FluxGitRepositoryGVK, gitops.Namespace, gitops.Name)
	if err != nil {
		return gitopsFalse(ReasonTenantUnreachable, "reading the GitRepository: %v", err)
	}
	ksObj, err := tenant.get(ctx, external.FluxKustomizationGVK, gitops.Namespace, gitops.Name)
	if err != nil {
		return gitopsFalse(ReasonTenantUnreachable, "reading the Kustomization: %v", err)
	}
	sync, err := gitops.Read(repoObj, ksObj)
	if err != nil {
		return gitopsFalse(ReasonTenantUnreachable, "reading Flux's status: %v", err)
	}
	out := gitopsOutcome{status: &v1alpha1.GitOpsStatus{Revision: sync.Revision, InSync: sync.InSync},
		condition: metav1.Condition{Type: ConditionGitOpsSynced, Status: metav1.ConditionFalse, Reason: sync.Reason, Message: sync.Message}}
	if sync.InSync {
		out.condition.Status = metav1.ConditionTrue
	}
	return out
}

// removeGitOps takes the repository's objects out of the tenant once the cluster no longer has
// one, as a hand-off: the Kustomization is set not to prune before it is deleted, so Flux's
// finalizer deletes nothing it applied. With the whole gitops slot gone, Flux's controllers go
// after them (the Kustomization's finalizer needs its controller); the CRDs and flux-system
// stay. A cluster that never had a repository has nothing to remove.
func (c *Controller) removeGitOps(ctx context.Context, s *state) steps.Result {
	if s.tc.Status.Gitops == nil && meta.FindStatusCondition(s.tc.Status.Conditions, ConditionGitOpsSynced) == nil {
		return steps.Ready("NoGitOps", "the cluster has no GitOps repository")
	}
	removing := func(format string, args ...any) steps.Result {
		found := gitopsFalse(ReasonRemoving, format, args...)
		found.status = s.tc.Status.Gitops
		s.gitops = &found
		s.recheckWithin(gitopsProgressRecheck)
		return steps.Ready("GitOps", "the repository's objects are being removed")
	}
	if s.kubeconfigSecret == "" {
		return removing("waiting for the control plane's admin kubeconfig")
	}
	tenant, err := c.tenantObjectsOf(ctx, string(s.tc.UID), s.namespace, s.kubeconfigSecret)
	if err != nil {
		return removing("%v", err)
	}
	gone, err := removeRepositoryObjects(ctx, tenant, s.tc.Spec.Addons.Gitops == nil)
	if err != nil {
		return removing("removing the repository's objects from the tenant: %v", err)
	}
	if !gone {
		return removing("removing the repository's objects from the tenant (what Flux applied stays)")
	}
	c.gitopsState.mu.Lock()
	delete(c.gitopsState.applied, string(s.tc.UID))
	c.gitopsState.mu.Unlock()
	s.gitops = &gitopsOutcome{clear: true}
	return steps.Ready("NoGitOps", "the cluster has no GitOps repository")
}

// removeRepositoryObjects deletes the Kustomization (not pruning), the GitRepository and the
// credential's copy, then the butler-gitops account and its cluster-admin binding, then, with
// controllers, Flux's Deployments; gone once all are.
func removeRepositoryObjects(ctx context.Context, tenant *objects, controllers bool) (bool, error) {
	if err := stopPruning(ctx, tenant); err != nil {
		return false, err
	}
	all := true
	for _, gvk := range []schema.GroupVersionKind{external.FluxKustomizationGVK, external.FluxGitRepositoryGVK, secretGVK} {
		gone, err := tenant.remove(ctx, gvk, gitops.Namespace, gitops.Name)
		if err != nil {
			return false, err
		}
		all = all && gone
	}
	if !all {
		return false, nil
	}
	// Then the account the Kustomization applied as: no cluster-admin account stays behind.
	for _, gvk := range []schema.GroupVersionKind{clusterRoleBindingGVK, serviceAccountGVK} {
		ns := gitops.Namespace
		if gvk == clusterRoleBindingGVK {
			ns = ""
		}
		gone, err := tenant.remove(ctx, gvk, ns, gitops.Name)
		if err != nil {
			return false, err
		}
		all = all && gone
	}
	if !all || !controllers {
		return all, nil
	}
	for _, name := range gitops.Controllers {
		gone, err := tenant.remove(ctx, deploymentGVK, gitops.Namespace, name)
		if err != nil {
			return false, err
		}
		all = all && gone
	}
	return all, nil
}

var (
	secretGVK             = corev1.SchemeGroupVersion.WithKind("Secret")
	namespaceGVK          = corev1.SchemeGroupVersion.WithKind("Namespace")
	serviceAccountGVK     = corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	clusterRoleBindingGVK = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}
	deploymentGVK         = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
)

// stopPruning sets the Kustomization's spec.prune to false before it is deleted, so that Flux's
// finalizer leaves what it applied in the tenant.
func stopPruning(ctx context.Context, tenant *objects) error {
	ks, err := tenant.get(ctx, external.FluxKustomizationGVK, gitops.Namespace, gitops.Name)
	if err != nil || ks == nil || ks.GetDeletionTimestamp() != nil {
		return err
	}
	kustomization, err := external.FromUnstructured[flux.Kustomization](ks)
	if err != nil || !kustomization.Spec.Prune {
		return err
	}
	r, err := tenant.resource(external.FluxKustomizationGVK, gitops.Namespace)
	if err != nil {
		return err
	}
	_, err = r.Patch(ctx, gitops.Name, types.MergePatchType, []byte(`{"spec":{"prune":false}}`), external.Workers.PatchOptions())
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// tenantObjectsOf is the tenant's objects client (dynamic, with its own discovery), kept while
// its admin kubeconfig Secret is unchanged.
func (c *Controller) tenantObjectsOf(ctx context.Context, uid, ns, secretName string) (*objects, error) {
	return keptTenantClient(ctx, c, &c.gitopsState.mu, c.gitopsState.clients, uid, ns, secretName, c.newTenantObjects)
}

// newAdminObjects is a tenant's objects client from its admin kubeconfig.
func newAdminObjects(kubeconfig []byte) (*objects, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = string(external.Workers)
	cfg.QPS, cfg.Burst = 50, 100 // as newAdminClient's
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &objects{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// lookupHost resolves a repository's host for the fetch policy, within lookupTimeout: the
// reconcile waits on it.
func lookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

const lookupTimeout = 5 * time.Second

// forgetGitOps drops what is remembered of a deleted cluster's tenant.
func (c *Controller) forgetGitOps(uid string) {
	c.gitopsState.mu.Lock()
	delete(c.gitopsState.applied, uid)
	delete(c.gitopsState.clients, uid)
	c.gitopsState.mu.Unlock()
}
