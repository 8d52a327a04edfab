package kubectlbutler

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
)

type kubeconfigOptions struct {
	*Options
	file       string
	merge      bool
	readOnly   bool
	expiration time.Duration
}

func newKubeconfigCommand(o *Options) *cobra.Command {
	k := &kubeconfigOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "kubeconfig CLUSTER [--merge] [--expiration DURATION]",
		Short: "Mint a kubeconfig for a TenantCluster and write it to a file or merge it into yours",
		Long: `Mints a kubeconfig through the TenantCluster's kubeconfig subresource (viewerkubeconfig
with --read-only) and writes it to --file (default CLUSTER.kubeconfig, "-" for standard
output), or with --merge adds it to your kubeconfig as the context CLUSTER.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return k.run(ctx(cmd), args[0]) },
	}
	cmd.Flags().StringVar(&k.file, "file", "", `where to write the kubeconfig (default CLUSTER.kubeconfig; "-" is standard output)`)
	cmd.Flags().BoolVar(&k.merge, "merge", false, "merge into your kubeconfig (the one --kubeconfig or KUBECONFIG names) as the context CLUSTER")
	cmd.Flags().BoolVar(&k.readOnly, "read-only", false, "mint a read-only kubeconfig (tenantclusters/viewerkubeconfig)")
	cmd.Flags().DurationVar(&k.expiration, "expiration", 0, "how long the kubeconfig is valid (the server's default and maximum apply)")
	return cmd
}

func (k *kubeconfigOptions) run(ctx context.Context, cluster string) error {
	if k.merge && k.file != "" {
		return fmt.Errorf("--merge and --file exclude each other")
	}
	butler, _, ns, err := k.clients()
	if err != nil {
		return err
	}
	minted, err := mint(ctx, butler, ns, cluster, k.readOnly, k.expiration)
	if err != nil {
		return err
	}
	if k.merge {
		return k.mergeInto(cluster, minted)
	}
	path := k.file
	if path == "" {
		path = cluster + ".kubeconfig"
	}
	if path == "-" {
		_, err = k.Out.Write(minted.Status.Kubeconfig)
		return err
	}
	if err := os.WriteFile(path, minted.Status.Kubeconfig, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(k.ErrOut, "Wrote the kubeconfig of %s/%s to %s (valid until %s)\n", ns, cluster, path, minted.Status.ExpirationTimestamp.UTC().Format(time.RFC3339))
	return nil
}

// mint asks the kubeconfig subresource (or viewerkubeconfig) for a kubeconfig.
func mint(ctx context.Context, butler clientset.Interface, ns, cluster string, readOnly bool, expiration time.Duration) (*v1alpha1.KubeconfigRequest, error) {
	req := &v1alpha1.KubeconfigRequest{}
	if expiration > 0 {
		s := int64(expiration / time.Second)
		req.Spec.ExpirationSeconds = &s
	}
	subresource := "kubeconfig"
	var answer *v1alpha1.KubeconfigRequest
	var err error
	if readOnly {
		subresource = "viewerkubeconfig"
		answer = &v1alpha1.KubeconfigRequest{}
		err = butler.ButlerV1alpha1().RESTClient().Post().Namespace(ns).Resource("tenantclusters").Name(cluster).
			SubResource(subresource).VersionedParams(&metav1.CreateOptions{}, metav1.ParameterCodec).Body(req).Do(ctx).Into(answer)
	} else {
		answer, err = butler.ButlerV1alpha1().TenantClusters(ns).CreateKubeconfig(ctx, cluster, req, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, explain(err, "minting a kubeconfig (tenantclusters/"+subresource+")", ns, cluster)
	}
	if len(answer.Status.Kubeconfig) == 0 {
		return nil, fmt.Errorf("tenantclusters/%s of %s/%s answered without a kubeconfig", subresource, ns, cluster)
	}
	return answer, nil
}

// mergeInto adds the minted kubeconfig to the user's as the context named after the cluster.
func (k *kubeconfigOptions) mergeInto(cluster string, minted *v1alpha1.KubeconfigRequest) error {
	access := k.Flags.ToRawKubeConfigLoader().ConfigAccess()
	existing, err := access.GetStartingConfig()
	if err != nil {
		return err
	}
	mintedConfig, err := clientcmd.Load(minted.Status.Kubeconfig)
	if err != nil {
		return fmt.Errorf("the minted kubeconfig does not parse: %w", err)
	}
	merged, err := Merge(existing, mintedConfig, cluster)
	if err != nil {
		return err
	}
	if err := clientcmd.ModifyConfig(access, *merged, false); err != nil {
		return err
	}
	fmt.Fprintf(k.ErrOut, "Context %q (cluster and user %q) merged into %s; use it with kubectl --context %s\n", cluster, cluster, access.GetDefaultFilename(), cluster)
	return nil
}

// Merge returns into with the minted kubeconfig's current context added under name: its
// cluster, user and context all named name, replacing what had that name. into's current
// context is kept.
func Merge(into, minted *clientcmdapi.Config, name string) (*clientcmdapi.Config, error) {
	current := minted.CurrentContext
	mc, ok := minted.Contexts[current]
	if !ok && len(minted.Contexts) == 1 {
		for _, c := range minted.Contexts {
			mc = c
		}
	}
	if mc == nil {
		return nil, fmt.Errorf("the minted kubeconfig has no current context")
	}
	cluster, user := minted.Clusters[mc.Cluster], minted.AuthInfos[mc.AuthInfo]
	if cluster == nil || user == nil {
		return nil, fmt.Errorf("the minted kubeconfig's context %q names no cluster or user", current)
	}
	out := into.DeepCopy()
	if out == nil {
		out = clientcmdapi.NewConfig()
	}
	if out.Clusters == nil {
		out.Clusters = map[string]*clientcmdapi.Cluster{}
	}
	if out.AuthInfos == nil {
		out.AuthInfos = map[string]*clientcmdapi.AuthInfo{}
	}
	if out.Contexts == nil {
		out.Contexts = map[string]*clientcmdapi.Context{}
	}
	out.Clusters[name] = cluster.DeepCopy()
	out.AuthInfos[name] = user.DeepCopy()
	ctx := mc.DeepCopy()
	ctx.Cluster, ctx.AuthInfo = name, name
	out.Contexts[name] = ctx
	return out, nil
}
