package pki

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// NotAfter is when the first certificate in certPEM expires.
func NotAfter(certPEM []byte) (time.Time, error) {
	for rest := certPEM; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return time.Time{}, errors.New("no certificate")
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return time.Time{}, err
		}
		return cert.NotAfter, nil
	}
}

// KubeconfigNotAfter is when the client certificate of a kubeconfig's current context expires.
func KubeconfigNotAfter(kubeconfig []byte) (time.Time, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return time.Time{}, err
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return time.Time{}, fmt.Errorf("no current context %q", cfg.CurrentContext)
	}
	user := cfg.AuthInfos[ctx.AuthInfo]
	if user == nil || len(user.ClientCertificateData) == 0 {
		return time.Time{}, errors.New("its user has no client certificate")
	}
	return NotAfter(user.ClientCertificateData)
}
