// Package providerconfig validates ProviderConfigs and keeps their status: a ProviderConfig is
// ready when its provider block is there, its credentials Secret exists and its keys parse as
// that provider's credentials (credentials.go), the identity object the infrastructure cluster
// will name exists (AWSClusterStaticIdentity, AzureClusterIdentity), and in ipam mode its pools
// exist; capacity is what those pools have left. The Ready condition names every problem. Nothing
// here calls a cloud: whether the credentials are accepted is for the provider to find out.
// TenantClusters wait on it.
package providerconfig

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// secretRecheck is how often a ProviderConfig whose credentials Secret is missing looks again:
// Secrets are not watched (a management cluster holds many), so their creation is not an event.
const secretRecheck = time.Minute

// Controller keeps ProviderConfig status.
type Controller struct {
	butler    clientset.Interface
	kube      kubernetes.Interface
	dynamic   dynamic.Interface
	providers listers.ProviderConfigLister
	pools     listers.NetworkPoolLister
	queue     *controllerkit.Queue
	synced    []cache.InformerSynced
}

// New builds the controller from the shared informers.
func New(d *controllerkit.Deps) (*Controller, error) {
	b := d.ButlerInformers.Butler().V1alpha1()
	c := &Controller{butler: d.Butler, kube: d.Kube, dynamic: d.Dynamic, providers: b.ProviderConfigs().Lister(), pools: b.NetworkPools().Lister()}
	c.queue = controllerkit.NewQueue("providerconfig", c.Reconcile)
	if _, err := b.ProviderConfigs().Informer().AddEventHandler(c.queue.Handler(controllerkit.ByKey)); err != nil {
		return nil, err
	}
	// A pool's capacity, or its creation, changes the ProviderConfigs of its namespace.
	byPool := func(obj any) []string {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil
		}
		all, _ := c.providers.ProviderConfigs(m.GetNamespace()).List(labels.Everything())
		keys := make([]string, 0, len(all))
		for _, pc := range all {
			keys = append(keys, pc.Namespace+"/"+pc.Name)
		}
		return keys
	}
	if _, err := b.NetworkPools().Informer().AddEventHandler(c.queue.Handler(byPool)); err != nil {
		return nil, err
	}
	c.synced = []cache.InformerSynced{b.ProviderConfigs().Informer().HasSynced, b.NetworkPools().Informer().HasSynced}
	return c, nil
}

// Run validates ProviderConfigs until ctx is done.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 1, c.synced...) }

// Reconcile validates one ProviderConfig and writes its status.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pc, err := c.providers.ProviderConfigs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	problems, recheck, err := c.check(ctx, pc)
	if err != nil {
		return err
	}
	status := pc.Status.DeepCopy()
	status.ObservedGeneration = pc.Generation
	status.Validated = true
	status.Ready = len(problems) == 0
	status.Capacity = c.capacity(pc)
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Validated",
		Message: fmt.Sprintf("%s provider ready", pc.Spec.Provider), ObservedGeneration: pc.Generation}
	if len(problems) > 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Invalid", strings.Join(problems, "; ")
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	if !apiequality.Semantic.DeepEqual(&pc.Status, status) {
		updated := pc.DeepCopy()
		updated.Status = *status
		_, err := c.butler.ButlerV1alpha1().ProviderConfigs(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if recheck {
		return controllerkit.RequeueAfter(secretRecheck)
	}
	return nil
}

// check lists what keeps pc from being used; recheck says a missing Secret is among it.
func (c *Controller) check(ctx context.Context, pc *v1alpha1.ProviderConfig) (problems []string, recheck bool, err error) {
	if missing := missingBlock(pc); missing != "" {
		problems = append(problems, fmt.Sprintf("spec.%s is required for provider %s", missing, pc.Spec.Provider))
	}
	if ref := pc.Spec.CredentialsRef; ref != nil {
		ns := ref.Namespace
		if ns == "" {
			ns = pc.Namespace
		}
		secret, err := c.kube.CoreV1().Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("credentials Secret %s/%s does not exist", ns, ref.Name))
			recheck = true
		case apierrors.IsForbidden(err):
			problems = append(problems, fmt.Sprintf("butler-apiserver may not read Secrets in namespace %s: keep credentials "+
				"in its own namespace (where artifacts/deploy/rbac.yaml lets it read them)", ns))
			recheck = true
		case err != nil:
			return nil, false, err
		case ref.Key != "" && len(secret.Data[ref.Key]) == 0:
			problems = append(problems, fmt.Sprintf("credentials Secret %s/%s has no key %q", ns, ref.Name, ref.Key))
			recheck = true
		default:
			if p := credentialProblems(pc.Spec.Provider, ref.Key, secret); len(p) > 0 {
				problems = append(problems, p...)
				recheck = true
			}
		}
		p, err := c.identityProblems(ctx, pc.Spec.Provider, ns, ref.Name)
		if err != nil {
			return nil, false, err
		}
		if len(p) > 0 {
			problems, recheck = append(problems, p...), true
		}
	} else if pc.Spec.Provider != v1alpha1.ProviderLocal {
		problems = append(problems, fmt.Sprintf("spec.credentialsRef is required for provider %s", pc.Spec.Provider))
	}
	if pc.Spec.Network.Mode == v1alpha1.NetworkModeIPAM {
		if len(pc.Spec.Network.PoolRefs) == 0 {
			problems = append(problems, "spec.network.poolRefs is empty in ipam mode")
		}
		for _, ref := range pc.Spec.Network.PoolRefs {
			if _, err := c.pools.NetworkPools(pc.Namespace).Get(ref.Name); apierrors.IsNotFound(err) {
				problems = append(problems, fmt.Sprintf("NetworkPool %s/%s does not exist", pc.Namespace, ref.Name))
			}
		}
	}
	return problems, recheck, nil
}

// missingBlock names the provider block pc lacks, or "" (local needs none).
func missingBlock(pc *v1alpha1.ProviderConfig) string {
	s := pc.Spec
	switch s.Provider {
	case v1alpha1.ProviderHarvester:
		if s.Harvester == nil {
			return "harvester"
		}
	case v1alpha1.ProviderNutanix:
		if s.Nutanix == nil {
			return "nutanix"
		}
	case v1alpha1.ProviderProxmox:
		if s.Proxmox == nil {
			return "proxmox"
		}
	case v1alpha1.ProviderAWS:
		if s.AWS == nil {
			return "aws"
		}
	case v1alpha1.ProviderAzure:
		if s.Azure == nil {
			return "azure"
		}
	case v1alpha1.ProviderGCP:
		if s.GCP == nil {
			return "gcp"
		}
	}
	return ""
}

// capacity sums the free addresses of pc's pools and how many tenants of the pools' default
// size they still fit (ipam mode only).
func (c *Controller) capacity(pc *v1alpha1.ProviderConfig) *v1alpha1.ProviderCapacity {
	if pc.Spec.Network.Mode != v1alpha1.NetworkModeIPAM {
		return nil
	}
	out := &v1alpha1.ProviderCapacity{}
	for _, ref := range pc.Spec.Network.PoolRefs {
		pool, err := c.pools.NetworkPools(pc.Namespace).Get(ref.Name)
		if err != nil {
			continue
		}
		out.AvailableIPs += pool.Status.AvailableIPs
		perTenant := int64(5 + 8)
		if d := pool.Spec.Defaults; d.NodesPerTenant != nil && d.LBPoolPerTenant != nil {
			perTenant = int64(*d.NodesPerTenant + *d.LBPoolPerTenant)
		}
		if perTenant > 0 {
			out.EstimatedTenants += int32(pool.Status.AvailableIPs / perTenant)
		}
	}
	return out
}

// identityProblems checks that the identity object the provider's infrastructure cluster will
// name exists and points at the credentials Secret. The identities (pkg/lifecycle/component/infra)
// are named after the credentials Secret, AWS's cluster-scoped, Azure's in the Secret's namespace.
func (c *Controller) identityProblems(ctx context.Context, provider v1alpha1.ProviderType, ns, secret string) ([]string, error) {
	var (
		gvk  schema.GroupVersionKind
		inNS string
		// field and secretOf are the identity's reference to the credentials Secret.
		field    string
		secretOf func(*unstructured.Unstructured) (string, error)
	)
	switch provider {
	case v1alpha1.ProviderAWS:
		gvk, field = external.AWSClusterStaticIdentityGVK, "spec.secretRef"
		secretOf = func(u *unstructured.Unstructured) (string, error) {
			id, err := external.FromUnstructured[external.AWSClusterStaticIdentity](u)
			if err != nil {
				return "", err
			}
			return id.Spec.SecretRef, nil
		}
	case v1alpha1.ProviderAzure:
		gvk, inNS, field = external.AzureClusterIdentityGVK, ns, "spec.clientSecret.name"
		secretOf = func(u *unstructured.Unstructured) (string, error) {
			id, err := external.FromUnstructured[external.AzureClusterIdentity](u)
			if err != nil {
				return "", err
			}
			return id.Spec.ClientSecret.Name, nil
		}
	default:
		return nil, nil
	}
	name := secret
	if inNS != "" {
		name = inNS + "/" + secret
	}
	u, err := c.dynamic.Resource(external.MustGVR(gvk)).Namespace(inNS).Get(ctx, secret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return []string{fmt.Sprintf("%s %s does not exist (the %s cluster names it as its identity; create it for the credentials Secret)", gvk.Kind, name, provider)}, nil
	}
	if err != nil {
		return nil, err
	}
	got, err := secretOf(u)
	if err != nil {
		return []string{fmt.Sprintf("%s %s: %v", gvk.Kind, name, err)}, nil
	}
	if got != secret {
		return []string{fmt.Sprintf("%s %s: %s is %q, not the credentials Secret %q", gvk.Kind, name, field, got, secret)}, nil
	}
	return nil, nil
}
