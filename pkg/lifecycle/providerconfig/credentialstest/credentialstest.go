// Package credentialstest makes made-up credentials Secrets' data in the shape each provider's
// Cluster API provider reads, for tests of ProviderConfig readiness (nothing calls a cloud).
package credentialstest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
)

// Data is a credentials Secret's data for provider ("aws", "azure", "gcp", "nutanix", "proxmox",
// "harvester"), and the key the ProviderConfig's credentialsRef names ("" for the providers
// that read several keys).
func Data(provider string) (data map[string]string, key string, err error) {
	switch provider {
	case "aws": // AWS's documented example key
		return map[string]string{"AccessKeyID": "AKIAIOSFODNN7EXAMPLE", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}, "", nil
	case "azure":
		return map[string]string{"clientSecret": "made-up"}, "", nil
	case "gcp":
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, "", err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, "", err
		}
		sa, err := json.Marshal(map[string]string{"type": "service_account", "project_id": "butler-test",
			"client_email": "capg@butler-test.iam.gserviceaccount.com",
			"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))})
		return map[string]string{"credentials": string(sa)}, "credentials", err
	case "nutanix":
		return map[string]string{"credentials": `[{"type":"basic_auth","data":{"prismCentral":{"username":"admin","password":"made-up"}}}]`}, "credentials", nil
	case "proxmox":
		return map[string]string{"url": "https://pve.example:8006", "token": "capmox@pve!capi", "secret": "00000000-0000-0000-0000-000000000007"}, "", nil
	case "harvester":
		return map[string]string{"kubeconfig": `apiVersion: v1
kind: Config
clusters: [{name: h, cluster: {server: "https://harvester.example:6443"}}]
users: [{name: b, user: {token: made-up}}]
contexts: [{name: h, context: {cluster: h, user: b}}]
current-context: h
`}, "kubeconfig", nil
	}
	return nil, "", nil
}
