package bootstrap

import (
	"testing"
	"time"
)

func TestGenerateToken(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		tok, err := GenerateToken()
		if err != nil {
			t.Fatal(err)
		}
		if !ValidToken(tok) {
			t.Fatalf("GenerateToken() = %q, not [a-z0-9]{6}.[a-z0-9]{16}", tok)
		}
		if seen[tok] {
			t.Fatalf("GenerateToken() repeated %q", tok)
		}
		seen[tok] = true
	}
}

func TestTokenSecret(t *testing.T) {
	exp := time.Date(2026, 11, 23, 20, 15, 0, 0, time.FixedZone("x", 3600))
	s, err := TokenSecret("abcdef.0123456789abcdef", exp, "for machine m1", map[string]string{"a": "b"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Namespace != "kube-system" || s.Name != "bootstrap-token-abcdef" || string(s.Type) != "bootstrap.kubernetes.io/token" {
		t.Errorf("secret = %s/%s type %s", s.Namespace, s.Name, s.Type)
	}
	want := map[string]string{
		"token-id":                       "abcdef",
		"token-secret":                   "0123456789abcdef",
		"expiration":                     "2026-11-23T19:15:00Z",
		"description":                    "for machine m1",
		"usage-bootstrap-authentication": "true",
		"usage-bootstrap-signing":        "true",
		"auth-extra-groups":              "system:bootstrappers:kubeadm:default-node-token",
	}
	if len(s.Data) != len(want) {
		t.Errorf("data has %d keys, want %d", len(s.Data), len(want))
	}
	for k, v := range want {
		if got := string(s.Data[k]); got != v {
			t.Errorf("data[%s] = %q, want %q", k, got, v)
		}
	}
	if s.Labels["a"] != "b" {
		t.Errorf("labels = %v", s.Labels)
	}
	tok, gotExp, err := TokenFromSecret(s)
	if err != nil || tok != "abcdef.0123456789abcdef" || !gotExp.Equal(exp) {
		t.Errorf("TokenFromSecret = %q, %v, %v", tok, gotExp, err)
	}
	if TokenSecretName(tok) != s.Name || TokenID(tok) != "abcdef" {
		t.Errorf("TokenSecretName/TokenID disagree with the Secret")
	}
	if _, err := TokenSecret("not-a-token", exp, "", nil); err == nil {
		t.Error("TokenSecret of a malformed token: want an error")
	}
	s.Type = "Opaque"
	if _, _, err := TokenFromSecret(s); err == nil {
		t.Error("TokenFromSecret of an Opaque Secret: want an error")
	}
}
