package bootstrapprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	bootstrapdata "github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// placeholderToken stands in for the token in the render that checks the input.
const placeholderToken = "abcdef.0123456789abcdef"

// ensureToken puts together the renderer's input and the token the data carries: the one the
// tenant still has, pushed out before it lapses, or a new one. The input is rendered once with
// a placeholder first, so a spec the renderer rejects leaves no token behind. A Machine that
// joined needs its token no more: it is removed.
func (c *Controller) ensureToken(ctx context.Context, s *state) (steps.Result, error) {
	if s.joined() {
		if err := c.removeTokens(ctx, s); err != nil {
			klog.FromContext(ctx).Info("Could not remove the bootstrap token of a joined machine; it expires on its own", "machine", s.machine.Name, "err", err)
		}
		return steps.Ready("Joined", "node %s joined; its tokens are removed", s.machine.Status.NodeRef.Name), nil
	}
	machine := s.machine
	if machine.Spec.Version == "" {
		return s.fail(ReasonMachineVersionMissing, fmt.Errorf("Machine %s has no spec.version; the data depends on the Kubernetes version", machine.Name), nil), nil
	}
	s.in = bootstrapdata.Input{
		ClusterName:       s.cluster,
		Endpoint:          s.endpoint,
		Token:             placeholderToken,
		CACert:            s.ca,
		NodeName:          machine.Name,
		KubernetesVersion: machine.Spec.Version,
		NodeLabels:        s.bc.Spec.NodeLabels,
		NodeTaints:        s.bc.Spec.NodeTaints,
		ClusterDNS:        s.bc.Spec.ClusterDNS,
		ClusterDomain:     s.bc.Spec.ClusterDomain,
		PodCIDR:           s.bc.Spec.PodCIDR,
		ServiceCIDR:       s.bc.Spec.ServiceCIDR,
		ProviderID:        c.providerID(ctx, machine),
	}
	if _, err := bootstrapdata.Render(s.os, s.in); err != nil {
		return renderFailure(s, err), nil
	}
	token, err := c.tenantToken(ctx, s)
	if err != nil {
		return s.fail(ReasonTenantUnreachable, fmt.Errorf("minting a bootstrap token in tenant cluster %s: %w", s.cluster, err), err), nil
	}
	s.in.Token = token
	return steps.Ready("TokenValid", "token %s in tenant cluster %s", bootstrapdata.TokenID(token), s.cluster), nil
}

func renderFailure(s *state, err error) steps.Result {
	reason := ReasonRenderFailed
	if errors.Is(err, bootstrapdata.ErrInvalidInput) {
		reason = ReasonInvalidSpec
	}
	return s.fail(reason, err, nil)
}

// tenantToken returns the token the data carries when the tenant still has it, pushing its
// expiration out when a third of the TTL is gone, or mints a new one.
func (c *Controller) tenantToken(ctx context.Context, s *state) (string, error) {
	bc, ttl := s.bc, s.ttl
	secrets := s.tenant.CoreV1().Secrets(bootstrapdata.TokenSecretNamespace)
	now := c.clock.Now()
	if token := c.currentToken(ctx, bc); token != "" {
		secret, err := secrets.Get(ctx, bootstrapdata.TokenSecretName(token), metav1.GetOptions{})
		switch {
		case err == nil && secret.Labels[ConfigUIDLabel] == string(bc.UID):
			_, expires, err := bootstrapdata.TokenFromSecret(secret)
			if err == nil && (expires.IsZero() || expires.Sub(now) > ttl*2/3) {
				return token, nil
			}
			if err == nil && expires.After(now) {
				patch, _ := json.Marshal(map[string]any{"data": map[string][]byte{
					"expiration": []byte(now.Add(ttl).UTC().Format(time.RFC3339))}})
				if _, err := secrets.Patch(ctx, secret.Name, types.MergePatchType, patch, external.Workers.PatchOptions()); err != nil {
					return "", fmt.Errorf("extending token %s: %w", bootstrapdata.TokenID(token), err)
				}
				return token, nil
			}
			// Expired: replace it.
		case err != nil && !apierrors.IsNotFound(err):
			return "", err
		}
	}
	token, err := bootstrapdata.GenerateToken()
	if err != nil {
		return "", err
	}
	secret, err := bootstrapdata.TokenSecret(token, now.Add(ttl),
		fmt.Sprintf("Bootstrap token of Machine %s/%s, minted by butler-apiserver", bc.Namespace, s.machine.Name),
		map[string]string{ConfigUIDLabel: string(bc.UID), ConfigNameLabel: labelValue(bc.Name), external.ManagedByLabel: external.ManagedBy})
	if err != nil {
		return "", err
	}
	if _, err := secrets.Create(ctx, secret, external.Workers.CreateOptions()); err != nil {
		return "", err
	}
	klog.FromContext(ctx).V(2).Info("Minted a bootstrap token in the tenant cluster", "tokenID", bootstrapdata.TokenID(token), "ttl", ttl)
	return token, nil
}

// currentToken is the token in the config's existing data Secret, if it is ours and parses.
func (c *Controller) currentToken(ctx context.Context, bc *external.BootstrapConfig) string {
	s := c.dataSecret(ctx, bc)
	if s == nil {
		return ""
	}
	info, err := bootstrapdata.Parse(bootstrapdata.OS(s.Annotations[bootstrapdata.OSAnnotation]), s.Data[bootstrapdata.DataValueKey])
	if err != nil {
		return ""
	}
	return info.Token
}

// dataSecret is the config's data Secret if it exists and the config controls it. The cache
// can lag our own apply, so a miss is asked of the API server before minting anew.
func (c *Controller) dataSecret(ctx context.Context, bc *external.BootstrapConfig) *corev1.Secret {
	s, err := c.secrets.Secrets(bc.Namespace).Get(bc.Name)
	if apierrors.IsNotFound(err) {
		s, err = c.kube.CoreV1().Secrets(bc.Namespace).Get(ctx, bc.Name, metav1.GetOptions{})
	}
	if err != nil || !metav1.IsControlledBy(s, bc) || len(s.Data[bootstrapdata.DataValueKey]) == 0 {
		return nil
	}
	return s
}

// cleanupTokens removes a deleted config's tokens from the tenant, best effort: they expire
// anyway, and a tenant being deleted must not hold the config.
func (c *Controller) cleanupTokens(ctx context.Context, s *state) (bool, error) {
	if s.cluster = c.clusterOf(s.bc); s.cluster == "" {
		return true, nil
	}
	if err := c.removeTokens(ctx, s); err != nil {
		klog.FromContext(ctx).Info("Could not remove the bootstrap tokens of a deleted config; they expire on their own", "err", err)
	}
	return true, nil
}

// removeTokens deletes the tenant token Secrets the config minted.
func (c *Controller) removeTokens(ctx context.Context, s *state) error {
	bc := s.bc
	if bc.UID == "" {
		return nil
	}
	tenant, r, _ := c.tenant(ctx, bc.Namespace, s.cluster)
	if tenant == nil {
		return errors.New(r.Message)
	}
	secrets := tenant.CoreV1().Secrets(bootstrapdata.TokenSecretNamespace)
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: ConfigUIDLabel + "=" + string(bc.UID)})
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range list.Items {
		if err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		klog.FromContext(ctx).V(2).Info("Removed a bootstrap token from the tenant cluster", "secret", s.Name)
	}
	return errors.Join(errs...)
}
