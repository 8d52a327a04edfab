package bootstrap

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bootstrap tokens in kubeadm's format (k8s.io/cluster-bootstrap's constants, which is not in
// this module graph): a Secret kube-system/bootstrap-token-<id> of type
// bootstrap.kubernetes.io/token that the API server's bootstrap authenticator accepts and the
// controller manager's tokencleaner deletes once expired.
const (
	TokenSecretType      corev1.SecretType = "bootstrap.kubernetes.io/token"
	TokenSecretNamespace                   = metav1.NamespaceSystem
	TokenSecretPrefix                      = "bootstrap-token-"
	// NodeTokenGroup is kubeadm's group for node bootstrap tokens; kubeadm's RBAC lets it
	// create CSRs, and the CSR approver auto-approves its node client certificates.
	NodeTokenGroup = "system:bootstrappers:kubeadm:default-node-token"

	tokenIDKey          = "token-id"
	tokenSecretKey      = "token-secret"
	tokenExpirationKey  = "expiration"
	tokenDescriptionKey = "description"
	tokenExtraGroupsKey = "auth-extra-groups"
	tokenUsageAuthKey   = "usage-bootstrap-authentication"
	tokenUsageSignKey   = "usage-bootstrap-signing"

	tokenChars = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// GenerateToken returns a random bootstrap token <6>.<16> of [a-z0-9].
func GenerateToken() (string, error) {
	id, err := randomString(6)
	if err != nil {
		return "", err
	}
	secret, err := randomString(16)
	if err != nil {
		return "", err
	}
	return id + "." + secret, nil
}

func randomString(n int) (string, error) {
	max := big.NewInt(int64(len(tokenChars)))
	var b strings.Builder
	for range n {
		i, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("bootstrap token: %w", err)
		}
		b.WriteByte(tokenChars[i.Int64()])
	}
	return b.String(), nil
}

// TokenID is the public part of a token, the suffix of its Secret's name.
func TokenID(token string) string {
	id, _, _ := strings.Cut(token, ".")
	return id
}

// TokenSecretName is the Secret name of a token (bootstrap-token-<id>).
func TokenSecretName(token string) string { return TokenSecretPrefix + TokenID(token) }

// TokenSecret builds the Secret of a node bootstrap token that expires at expires, usable for
// authentication (the kubelet's TLS bootstrap) and signing (kubeadm's cluster-info
// discovery), in kubeadm's default node group.
func TokenSecret(token string, expires time.Time, description string, labels map[string]string) (*corev1.Secret, error) {
	if !ValidToken(token) {
		return nil, fmt.Errorf("bootstrap token %q is not of the form [a-z0-9]{6}.[a-z0-9]{16}", redact(token))
	}
	id, secret, _ := strings.Cut(token, ".")
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      TokenSecretPrefix + id,
			Namespace: TokenSecretNamespace,
			Labels:    labels,
		},
		Type: TokenSecretType,
		Data: map[string][]byte{
			tokenIDKey:          []byte(id),
			tokenSecretKey:      []byte(secret),
			tokenExpirationKey:  []byte(expires.UTC().Format(time.RFC3339)),
			tokenDescriptionKey: []byte(description),
			tokenUsageAuthKey:   []byte("true"),
			tokenUsageSignKey:   []byte("true"),
			tokenExtraGroupsKey: []byte(NodeTokenGroup),
		},
	}, nil
}

// TokenFromSecret returns the token a bootstrap token Secret holds and its expiry (zero when
// it has none).
func TokenFromSecret(s *corev1.Secret) (token string, expires time.Time, err error) {
	if s.Type != TokenSecretType {
		return "", time.Time{}, fmt.Errorf("secret %s/%s is of type %q, not %q", s.Namespace, s.Name, s.Type, TokenSecretType)
	}
	token = string(s.Data[tokenIDKey]) + "." + string(s.Data[tokenSecretKey])
	if !ValidToken(token) {
		return "", time.Time{}, fmt.Errorf("secret %s/%s holds no valid token", s.Namespace, s.Name)
	}
	if exp := s.Data[tokenExpirationKey]; len(exp) > 0 {
		if expires, err = time.Parse(time.RFC3339, string(exp)); err != nil {
			return "", time.Time{}, fmt.Errorf("secret %s/%s expiration: %w", s.Namespace, s.Name, err)
		}
	}
	return token, expires, nil
}
