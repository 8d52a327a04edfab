package storage

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// KubeconfigSecretKeys are the keys a tenant cluster's kubeconfig Secret may hold it under, in
// the order they are tried: Steward/Kamaji's admin kubeconfig Secret, then Cluster API's
// <cluster>-kubeconfig Secret, then a plain "kubeconfig".
var KubeconfigSecretKeys = []string{"admin.conf", "value", "kubeconfig"}

// KubeconfigREST is tenantclusters/kubeconfig and tenantclusters/viewerkubeconfig (and, made by
// NewBreakGlassKubeconfigREST, tenantclusters/breakglasskubeconfig): create-only
// subresources that answer a KubeconfigRequest with a kubeconfig minted for the asker: a client
// certificate signed by the tenant CA (<tc>-ca) that carries identity only (package access: the
// asker's name and the groups the cluster's Team lists them by, prefixed "butler:"), valid for
// spec.expirationSeconds (1h by default, capped by a flag); the role comes from the Team's
// bindings in the tenant, kept in step with the Team. Only the Team's members may mint (403 for
// anyone else, whatever the management cluster's RBAC lets them ask); a viewer only through
// viewerkubeconfig, whose identity ends ":readonly" and is bound to view alone. A cluster that no
// Team owns gets the platform admins' identity, for whom the management cluster's RBAC lets ask.
// Being a POST it is authorized as the verb create on the subresource, so reading a
// TenantCluster does not grant its credentials. The server and CA come from the kubeconfig Secret
// status.kubeconfigSecretRef names, in status.tenantNamespace (or the cluster's namespace).
type KubeconfigREST struct {
	clusters rest.Getter
	// teams reads Teams; nil when there are none (every cluster is then the platform admins').
	teams rest.Getter
	// secrets reads the management cluster's Secrets; nil when there is no management cluster.
	secrets corev1client.SecretsGetter
	// readOnly is viewerkubeconfig.
	readOnly bool
	// breakGlass is breakglasskubeconfig: the platform's way in, recorded by an Event in events.
	breakGlass bool
	events     corev1client.EventsGetter
	// defaultExpiration is the validity when spec.expirationSeconds is unset; maxExpiration caps it.
	defaultExpiration, maxExpiration time.Duration
	now                              func() time.Time
}

// DefaultKubeconfigExpiration is how long a minted kubeconfig lasts when the request says nothing.
const DefaultKubeconfigExpiration = time.Hour

var (
	_ rest.NamedCreater             = &KubeconfigREST{}
	_ rest.GroupVersionKindProvider = &KubeconfigREST{}
)

// NewKubeconfigREST returns a kubeconfig subresource over the tenantclusters store (readOnly:
// viewerkubeconfig). secrets may be nil (standalone mode): requests then get a
// ServiceUnavailable error saying why. maxExpiration caps the validity of minted kubeconfigs
// (24h when zero).
func NewKubeconfigREST(clusters, teams rest.Getter, secrets corev1client.SecretsGetter, maxExpiration time.Duration, readOnly bool) *KubeconfigREST {
	if maxExpiration <= 0 {
		maxExpiration = 24 * time.Hour
	}
	return &KubeconfigREST{clusters: clusters, teams: teams, secrets: secrets, readOnly: readOnly,
		defaultExpiration: DefaultKubeconfigExpiration, maxExpiration: maxExpiration, now: time.Now}
}

// New returns an empty KubeconfigRequest.
func (r *KubeconfigREST) New() runtime.Object { return &butler.KubeconfigRequest{} }

// Destroy does nothing: the store is shared with the main resource.
func (r *KubeconfigREST) Destroy() {}

// GroupVersionKind says the subresource speaks KubeconfigRequest, not TenantCluster.
func (r *KubeconfigREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return v1alpha1.SchemeGroupVersion.WithKind("KubeconfigRequest")
}

func (r *KubeconfigREST) subresource() string {
	if r.breakGlass {
		return "tenantclusters/breakglasskubeconfig"
	}
	if r.readOnly {
		return "tenantclusters/viewerkubeconfig"
	}
	return "tenantclusters/kubeconfig"
}

// Create answers the request with a kubeconfig of the TenantCluster called name for the asker.
func (r *KubeconfigREST) Create(ctx context.Context, name string, obj runtime.Object,
	createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*butler.KubeconfigRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a KubeconfigRequest, got %T", obj))
	}
	if errs := validation.ValidateKubeconfigRequest(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(v1alpha1.SchemeGroupVersion.WithKind("KubeconfigRequest").GroupKind(), name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	got, err := r.clusters.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cluster := got.(*butler.TenantCluster)
	who, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("the request carries no user to issue a kubeconfig for")
	}
	id, err := r.identity(ctx, cluster, who)
	if err != nil {
		return nil, err
	}
	kubeconfig, ca, err := r.tenantCredentials(ctx, cluster)
	if err != nil {
		return nil, err
	}
	minted, expiry, err := mintKubeconfig(kubeconfig, ca, id, r.expiration(ctx, req), r.now())
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("issuing a kubeconfig for %s/%s: %w", cluster.Namespace, name, err))
	}
	if r.breakGlass {
		if err := r.recordBreakGlass(ctx, cluster, who.GetName(), id, expiry); err != nil {
			return nil, err
		}
	}
	out := req.DeepCopy()
	if ns, ok := genericapirequest.NamespaceFrom(ctx); ok {
		out.Namespace = ns
	}
	out.Name = name
	out.Status.Kubeconfig = minted
	out.Status.ExpirationTimestamp = metav1.NewTime(expiry)
	out.Status.User, out.Status.Groups = id.User, id.Groups
	return out, nil
}

// tenantCredentials reads what a kubeconfig for the cluster is made of: the stored one (for
// the server and its CA) and the tenant CA that signs the asker's own credential (never the
// stored admin's). 409 while the cluster has none yet.
func (r *KubeconfigREST) tenantCredentials(ctx context.Context, cluster *butler.TenantCluster) ([]byte, *pki.KeyPair, error) {
	resource := v1alpha1.Resource(r.subresource())
	if cluster.Status.KubeconfigSecretRef == nil || cluster.Status.KubeconfigSecretRef.Name == "" {
		phase := cluster.Status.Phase
		if phase == "" {
			phase = "Pending"
		}
		return nil, nil, apierrors.NewConflict(resource, cluster.Name, fmt.Errorf(
			"tenant cluster %s/%s has no kubeconfig yet (phase %s): its control plane is not ready",
			cluster.Namespace, cluster.Name, phase))
	}
	if r.secrets == nil {
		return nil, nil, apierrors.NewServiceUnavailable(
			"kubeconfigs are kept in the management cluster, and this butler-apiserver runs standalone without one")
	}
	// The lifecycle controller keeps a cluster's Secrets in its tenant namespace.
	secretNS := cluster.Status.TenantNamespace
	if secretNS == "" {
		secretNS = cluster.Namespace
	}
	kubeconfig, err := r.storedKubeconfig(ctx, cluster.Name, secretNS, cluster.Status.KubeconfigSecretRef.Name)
	if err != nil {
		return nil, nil, err
	}
	caName := cluster.Name + "-ca"
	caSecret, err := r.secrets.Secrets(secretNS).Get(ctx, caName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("reading the tenant CA Secret %s/%s: %w", secretNS, caName, err))
	}
	var ca *pki.KeyPair
	if err == nil {
		ca, _ = caFrom(caSecret.Data)
	}
	if ca == nil {
		return nil, nil, apierrors.NewConflict(resource, cluster.Name, fmt.Errorf(
			"the tenant CA Secret %s/%s holds no CA certificate and key (ca.crt/ca.key or tls.crt/tls.key): a kubeconfig bound to the asker is signed with it",
			secretNS, caName))
	}
	return kubeconfig, ca, nil
}

// storedKubeconfig is the kubeconfig in the Secret namespace/name that the status of cluster
// (called name) names, under the first of KubeconfigSecretKeys it holds.
func (r *KubeconfigREST) storedKubeconfig(ctx context.Context, name, namespace, secretName string) ([]byte, error) {
	resource := v1alpha1.Resource(r.subresource())
	secret, err := r.secrets.Secrets(namespace).Get(ctx, secretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, apierrors.NewConflict(resource, name, fmt.Errorf(
			"the kubeconfig Secret %s/%s named by status.kubeconfigSecretRef does not exist (yet)", namespace, secretName))
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("reading the kubeconfig Secret %s/%s: %w", namespace, secretName, err))
	}
	for _, key := range KubeconfigSecretKeys {
		if v := secret.Data[key]; len(v) > 0 {
			return v, nil
		}
	}
	return nil, apierrors.NewConflict(resource, name, fmt.Errorf(
		"the kubeconfig Secret %s/%s holds none of the keys %q", namespace, secretName, KubeconfigSecretKeys))
}

// expiration is the minted credential's lifetime: the asked one or the default, capped (with a
// warning) at the server's maximum.
func (r *KubeconfigREST) expiration(ctx context.Context, req *butler.KubeconfigRequest) time.Duration {
	ttl := r.defaultExpiration
	if s := req.Spec.ExpirationSeconds; s != nil {
		ttl = time.Duration(*s) * time.Second
	}
	if ttl > r.maxExpiration {
		warning.AddWarning(ctx, "", fmt.Sprintf("spec.expirationSeconds is capped at %d by this server", int64(r.maxExpiration/time.Second)))
		ttl = r.maxExpiration
	}
	return ttl
}

// identity is what the asker's certificate is to say in the tenant: as a member of the cluster's
// Team (403 for anyone else, and for a viewer asking for more than read-only), or as a platform
// admin for a cluster no Team owns.
func (r *KubeconfigREST) identity(ctx context.Context, cluster *butler.TenantCluster, who user.Info) (access.Identity, error) {
	if r.breakGlass {
		return BreakGlassIdentity(who.GetName()), nil // RBAC on the subresource is the check
	}
	resource := v1alpha1.Resource(r.subresource())
	if name := who.GetName(); strings.HasPrefix(name, breakGlassUserPrefix) || strings.HasSuffix(name, access.ReadOnlySuffix) {
		return access.Identity{}, apierrors.NewForbidden(resource, cluster.Name, fmt.Errorf(
			"user names beginning %q or ending %q are kept for butler's own identities in tenants (break-glass, read-only): %q gets no kubeconfig", breakGlassUserPrefix, access.ReadOnlySuffix, name))
	}
	team, err := r.teamOf(ctx, cluster)
	if err != nil {
		return access.Identity{}, err
	}
	if team == nil {
		return access.PlatformAdminIdentity(who.GetName(), r.readOnly), nil
	}
	var members access.Members
	for _, u := range team.Spec.Access.Users {
		members.Users = append(members.Users, access.Member{Name: u.Name, Role: v1alpha1.TeamRole(u.Role)})
	}
	for _, g := range team.Spec.Access.Groups {
		members.Groups = append(members.Groups, access.Member{Name: g.Name, Role: v1alpha1.TeamRole(g.Role)})
	}
	id, role, ok := access.IdentityOf(members, who.GetName(), who.GetGroups(), r.readOnly)
	if !ok {
		return id, apierrors.NewForbidden(resource, cluster.Name, fmt.Errorf(
			"%q is not a member of Team %s, which owns the cluster: only its members get credentials for it", who.GetName(), team.Name))
	}
	if !r.readOnly && role == v1alpha1.TeamRoleViewer {
		return id, apierrors.NewForbidden(resource, cluster.Name, fmt.Errorf(
			"%q is a viewer of Team %s: a viewer may mint only a read-only kubeconfig (POST tenantclusters/%s/viewerkubeconfig)", who.GetName(), team.Name, cluster.Name))
	}
	return id, nil
}

// teamOf is the Team that owns the cluster: its teamRef, else the Team of its namespace (a
// Team's namespace bears its name); nil when there is none.
func (r *KubeconfigREST) teamOf(ctx context.Context, cluster *butler.TenantCluster) (*butler.Team, error) {
	if r.teams == nil {
		return nil, nil
	}
	name := cluster.Namespace
	if cluster.Spec.TeamRef != nil && cluster.Spec.TeamRef.Name != "" {
		name = cluster.Spec.TeamRef.Name
	}
	obj, err := r.teams.Get(ctx, name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*butler.Team), nil
}
