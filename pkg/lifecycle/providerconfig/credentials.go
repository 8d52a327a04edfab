package providerconfig

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// The credentials each provider's Cluster API provider reads from the Secret a ProviderConfig
// names, checked for shape only: nothing here calls a cloud. Every problem names the Secret's
// key and what is wrong, never a value.

var (
	awsAccessKeyID = regexp.MustCompile(`^(AKIA|ASIA)[A-Z0-9]{16}$`)
	// proxmoxTokenID is user@realm!tokenid, Proxmox's API token id.
	proxmoxTokenID = regexp.MustCompile(`^[^@!\s]+@[^@!\s]+![A-Za-z][A-Za-z0-9._-]*$`)
)

// credentialKeys is the key a single-document credential lives under when the ProviderConfig's
// credentialsRef names none: the key each provider reads.
var credentialKeys = map[v1alpha1.ProviderType]string{
	v1alpha1.ProviderHarvester: "kubeconfig",  // CAPK's infraClusterSecretRef
	v1alpha1.ProviderNutanix:   "credentials", // CAPX's prismCentral.credentialRef
	v1alpha1.ProviderGCP:       "credentials", // CAPG's credentialsRef
}

// credentialProblems lists what keeps the Secret's data from being the provider's credentials.
func credentialProblems(provider v1alpha1.ProviderType, key string, s *corev1.Secret) []string {
	name := s.Namespace + "/" + s.Name
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("credentials Secret %s: ", name)+fmt.Sprintf(format, args...))
	}
	need := func(k string) string {
		v := strings.TrimSpace(string(s.Data[k]))
		if v == "" {
			bad("key %q is missing or empty", k)
		}
		return v
	}
	if key == "" {
		key = credentialKeys[provider]
	}
	switch provider {
	case v1alpha1.ProviderAWS:
		// CAPA's AWSClusterStaticIdentity Secret.
		if id := need("AccessKeyID"); id != "" && !awsAccessKeyID.MatchString(id) {
			bad("AccessKeyID is not an AWS access key id (AKIA or ASIA and 16 upper-case letters or digits)")
		}
		if secret := need("SecretAccessKey"); secret != "" && len(secret) != 40 {
			bad("SecretAccessKey has %d characters, an AWS secret access key has 40", len(secret))
		}
	case v1alpha1.ProviderAzure:
		// CAPZ's AzureClusterIdentity (type ServicePrincipal) reads the client secret here.
		need("clientSecret")
	case v1alpha1.ProviderGCP:
		if v := need(key); v != "" {
			if err := gcpServiceAccountKey([]byte(v)); err != nil {
				bad("key %q is not a GCP service account key: %v", key, err)
			}
		}
	case v1alpha1.ProviderNutanix:
		if v := need(key); v != "" {
			if err := nutanixCredentials([]byte(v)); err != nil {
				bad("key %q is not CAPX credentials: %v", key, err)
			}
		}
	case v1alpha1.ProviderProxmox:
		// CAPMOX's credentialsRef Secret.
		if u := need("url"); u != "" {
			if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" {
				bad("url is not an https URL of the Proxmox API")
			}
		}
		if id := need("token"); id != "" && !proxmoxTokenID.MatchString(id) {
			bad("token is not a Proxmox API token id (user@realm!tokenid)")
		}
		need("secret")
	case v1alpha1.ProviderHarvester:
		if v := need(key); v != "" {
			if err := kubeconfig([]byte(v)); err != nil {
				bad("key %q is not a kubeconfig of the Harvester cluster: %v", key, err)
			}
		}
	}
	return problems
}

func gcpServiceAccountKey(data []byte) error {
	var k struct {
		Type        string `json:"type"`
		ProjectID   string `json:"project_id"`
		ClientEmail string `json:"client_email"`
		PrivateKey  string `json:"private_key"`
	}
	if err := json.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	var missing []string
	for f, v := range map[string]string{"project_id": k.ProjectID, "client_email": k.ClientEmail, "private_key": k.PrivateKey} {
		if v == "" {
			missing = append(missing, f)
		}
	}
	switch {
	case k.Type != "service_account":
		return fmt.Errorf("type is %q, want service_account", k.Type)
	case len(missing) > 0:
		return fmt.Errorf("no %s", strings.Join(slices.Sorted(slices.Values(missing)), ", "))
	}
	block, _ := pem.Decode([]byte(k.PrivateKey))
	if block == nil {
		return fmt.Errorf("private_key is not PEM")
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		return fmt.Errorf("private_key does not parse: %v", err)
	}
	return nil
}

func nutanixCredentials(data []byte) error {
	var creds []struct {
		Type string `json:"type"`
		Data struct {
			PrismCentral struct {
				Username string `json:"username"`
				Password string `json:"password"`
			} `json:"prismCentral"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &creds); err != nil {
		return fmt.Errorf("not a JSON list of credentials: %v", err)
	}
	for _, c := range creds {
		if c.Type == "basic_auth" && c.Data.PrismCentral.Username != "" && c.Data.PrismCentral.Password != "" {
			return nil
		}
	}
	return fmt.Errorf("no basic_auth entry with data.prismCentral.username and password")
}

func kubeconfig(data []byte) error {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return err
	}
	if err := clientcmd.ConfirmUsable(*cfg, ""); err != nil {
		return err
	}
	return nil
}
