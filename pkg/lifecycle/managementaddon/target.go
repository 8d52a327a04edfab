package managementaddon

import (
	"errors"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// target is the management cluster as the engine reaches it for addon: the controller's own
// server and credential, impersonating the addon's account. One cache entry per account, so
// two addons of one account share clients and a changed account gets new ones.
func (c *Controller) target(addon *v1alpha1.ManagementAddon) (addons.Target, error) {
	account := addon.Spec.ServiceAccountRef
	kubeconfig, err := impersonatingKubeconfig(c.management, account.Namespace, account.Name)
	if err != nil {
		return addons.Target{}, err
	}
	return addons.Target{Cluster: "management/" + account.Namespace + "/" + account.Name, Kubeconfig: kubeconfig}, nil
}

// impersonatingKubeconfig writes cfg as a kubeconfig whose user impersonates the ServiceAccount
// namespace/name (kubeconfig's `as`). No groups are asked for: kube-apiserver then gives the
// account its own (system:serviceaccounts, system:serviceaccounts:<namespace>), and butler
// needs no right to impersonate groups. A token file is named, not copied, so a rotated token
// is read as client-go reads it.
func impersonatingKubeconfig(cfg *rest.Config, namespace, name string) ([]byte, error) {
	switch {
	case cfg == nil:
		return nil, errors.New("no management cluster: ManagementAddons need one")
	case cfg.ExecProvider != nil || cfg.AuthProvider != nil:
		return nil, errors.New("the controller's credential is an exec or auth plugin, which a kubeconfig of its own cannot carry")
	case cfg.Impersonate.UserName != "":
		return nil, errors.New("the controller's client already impersonates " + cfg.Impersonate.UserName)
	}
	user := &clientcmdapi.AuthInfo{
		Token: cfg.BearerToken, TokenFile: cfg.BearerTokenFile,
		ClientCertificate: cfg.CertFile, ClientCertificateData: cfg.CertData,
		ClientKey: cfg.KeyFile, ClientKeyData: cfg.KeyData,
		Impersonate: serviceaccount.MakeUsername(namespace, name),
	}
	cluster := &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthority: cfg.CAFile,
		CertificateAuthorityData: cfg.CAData, InsecureSkipTLSVerify: cfg.Insecure, TLSServerName: cfg.ServerName}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["management"] = cluster
	kc.AuthInfos["addon"] = user
	kc.Contexts["addon"] = &clientcmdapi.Context{Cluster: "management", AuthInfo: "addon"}
	kc.CurrentContext = "addon"
	return clientcmd.Write(*kc)
}
