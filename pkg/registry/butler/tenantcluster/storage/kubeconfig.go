package storage

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
)

// KubeconfigSecretKeys are the keys a tenant cluster's kubeconfig Secret may hold it under, in
// the order they are tried: Steward/Kamaji's admin kubeconfig Secret, then Cluster API's
// <cluster>-kubeconfig Secret, then a plain "kubeconfig".
var KubeconfigSecretKeys = []string{"admin.conf", "value", "kubeconfig"}

// KubeconfigREST is tenantclusters/kubeconfig: a create-only subresource that answers a
// KubeconfigRequest with a kubeconfig for the tenant cluster: where the tenant CA Secret
// (<tc>-ca) is readable, one with a client certificate minted for the requester (CN their name,
// O system:masters) valid for spec.expirationSeconds (1h by default, capped by a flag); else
// the stored admin kubeconfig, with a warning when it outlives what was asked. Being a POST it is authorized
// as the verb create on tenantclusters/kubeconfig, so reading a TenantCluster does not grant its
// credentials. The kubeconfig is read, with butler-apiserver's own identity, from the Secret in
// the management cluster that status.kubeconfigSecretRef names, in status.tenantNamespace (or,
// without one, the TenantCluster's namespace).
type KubeconfigREST struct {
	clusters rest.Getter
	// secrets reads the management cluster's Secrets; nil when there is no management cluster.
	secrets corev1client.SecretsGetter
	// maxExpiration caps spec.expirationSeconds.
	maxExpiration time.Duration
	now           func() time.Time
}

// DefaultKubeconfigExpiration is how long a minted kubeconfig lasts when the request says nothing.
const DefaultKubeconfigExpiration = time.Hour

var (
	_ rest.NamedCreater             = &KubeconfigREST{}
	_ rest.GroupVersionKindProvider = &KubeconfigREST{}
)

// NewKubeconfigREST returns the kubeconfig subresource over the tenantclusters store. secrets
// may be nil (standalone mode): requests then get a ServiceUnavailable error saying why.
// maxExpiration caps the validity of minted kubeconfigs (24h when zero).
func NewKubeconfigREST(clusters rest.Getter, secrets corev1client.SecretsGetter, maxExpiration time.Duration) *KubeconfigREST {
	if maxExpiration <= 0 {
		maxExpiration = 24 * time.Hour
	}
	return &KubeconfigREST{clusters: clusters, secrets: secrets, maxExpiration: maxExpiration, now: time.Now}
}

// New returns an empty KubeconfigRequest.
func (r *KubeconfigREST) New() runtime.Object { return &butler.KubeconfigRequest{} }

// Destroy does nothing: the store is shared with the main resource.
func (r *KubeconfigREST) Destroy() {}

// GroupVersionKind says the subresource speaks KubeconfigRequest, not TenantCluster.
func (r *KubeconfigREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return v1alpha1.SchemeGroupVersion.WithKind("KubeconfigRequest")
}

// Create answers the request with the admin kubeconfig of the TenantCluster called name.
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
	resource := v1alpha1.Resource("tenantclusters/kubeconfig")
	if cluster.Status.KubeconfigSecretRef == nil || cluster.Status.KubeconfigSecretRef.Name == "" {
		phase := cluster.Status.Phase
		if phase == "" {
			phase = "Pending"
		}
		return nil, apierrors.NewConflict(resource, name, fmt.Errorf(
			"tenant cluster %s/%s has no kubeconfig yet (phase %s): its control plane is not ready",
			cluster.Namespace, name, phase))
	}
	if r.secrets == nil {
		return nil, apierrors.NewServiceUnavailable(
			"kubeconfigs are kept in the management cluster, and this butler-apiserver runs standalone without one")
	}

	// The lifecycle worker keeps a cluster's Secrets in its tenant namespace.
	secretNS := cluster.Status.TenantNamespace
	if secretNS == "" {
		secretNS = cluster.Namespace
	}
	secretName := cluster.Status.KubeconfigSecretRef.Name
	secret, err := r.secrets.Secrets(secretNS).Get(ctx, secretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, apierrors.NewConflict(resource, name, fmt.Errorf(
			"the kubeconfig Secret %s/%s named by status.kubeconfigSecretRef does not exist (yet)", secretNS, secretName))
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("reading the kubeconfig Secret %s/%s: %w", secretNS, secretName, err))
	}
	var kubeconfig []byte
	for _, key := range KubeconfigSecretKeys {
		if v := secret.Data[key]; len(v) > 0 {
			kubeconfig = v
			break
		}
	}
	if kubeconfig == nil {
		return nil, apierrors.NewConflict(resource, name, fmt.Errorf(
			"the kubeconfig Secret %s/%s holds none of the keys %q", secretNS, secretName, KubeconfigSecretKeys))
	}

	out := req.DeepCopy()
	if ns, ok := genericapirequest.NamespaceFrom(ctx); ok {
		out.Namespace = ns
	}
	out.Name = name

	// Mint a credential of its own for the requester when the tenant CA is readable.
	ttl := DefaultKubeconfigExpiration
	if s := req.Spec.ExpirationSeconds; s != nil {
		ttl = time.Duration(*s) * time.Second
	}
	if ttl > r.maxExpiration {
		warning.AddWarning(ctx, "", fmt.Sprintf("spec.expirationSeconds is capped at %d by this server", int64(r.maxExpiration/time.Second)))
		ttl = r.maxExpiration
	}
	caSecret, err := r.secrets.Secrets(secretNS).Get(ctx, cluster.Name+"-ca", metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading the tenant CA Secret %s/%s-ca: %w", secretNS, cluster.Name, err))
	}
	if err == nil {
		if ca, caKey, ok := caFrom(caSecret.Data); ok {
			who, ok := genericapirequest.UserFrom(ctx)
			if !ok {
				return nil, apierrors.NewBadRequest("the request carries no user to issue a kubeconfig for")
			}
			minted, expiry, err := mintKubeconfig(kubeconfig, ca, caKey, who, ttl, r.now())
			if err != nil {
				return nil, apierrors.NewInternalError(fmt.Errorf("issuing a kubeconfig for %s/%s: %w", cluster.Namespace, name, err))
			}
			out.Status.Kubeconfig = minted
			out.Status.ExpirationTimestamp = metav1.NewTime(expiry)
			return out, nil
		}
	}

	// No readable CA: the stored admin credential, as it is.
	out.Status.Kubeconfig = kubeconfig
	if expiry, ok := credentialExpiry(kubeconfig); ok {
		out.Status.ExpirationTimestamp = metav1.NewTime(expiry)
		// The stored credential cannot be shortened here: say so rather than pretend.
		if s := req.Spec.ExpirationSeconds; s != nil && expiry.After(time.Now().Add(time.Duration(*s)*time.Second)) {
			warning.AddWarning(ctx, "", fmt.Sprintf(
				"the admin credential of %s/%s expires at %s, later than the %d seconds asked for",
				cluster.Namespace, name, expiry.UTC().Format(time.RFC3339), *s))
		}
	}
	return out, nil
}

// credentialExpiry is when the client certificate of the kubeconfig's current context expires.
// Kubeconfigs with tokens or exec plugins carry no expiry that can be read.
func credentialExpiry(kubeconfig []byte) (time.Time, bool) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return time.Time{}, false
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return time.Time{}, false
	}
	auth, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok || len(auth.ClientCertificateData) == 0 {
		return time.Time{}, false
	}
	block, _ := pem.Decode(auth.ClientCertificateData)
	if block == nil {
		return time.Time{}, false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, false
	}
	return cert.NotAfter, true
}
