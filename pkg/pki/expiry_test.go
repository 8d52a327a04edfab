package pki

import (
	"testing"
	"time"
)

func TestNotAfter(t *testing.T) {
	ca, err := NewCA("tenant")
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour).Truncate(time.Second)
	leaf, err := ca.Issue(Request{CommonName: "admin", Usage: ClientAuth, NotAfter: until})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := NotAfter(ca.CertPEM); err != nil || !got.After(until) {
		t.Errorf("the CA expires %s (%v), after its leaf", got, err)
	}
	kubeconfig, err := Kubeconfig("c", "https://127.0.0.1:1", ca.CertPEM, "admin", leaf)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := KubeconfigNotAfter(kubeconfig); err != nil || !got.Equal(until) {
		t.Errorf("the kubeconfig's certificate expires %s (%v), want %s", got, err, until)
	}
	if _, err := NotAfter(ca.KeyPEM); err == nil {
		t.Error("a key is no certificate")
	}
}
