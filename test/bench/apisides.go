package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The two sides of P1, P2 and P2b on one plane: Butler's CRDs installed beside the aggregated
// API, and the namespaces the TenantClusters are spread over.

// sides are the aggregated API and the CRD copy, both through p's kube-apiserver.
func (p *plane) sides() (agg, crd side) {
	agg = side{name: "aggregated", group: "butler.butlerlabs.dev", base: p.kube.Host + "/apis/butler.butlerlabs.dev/v1alpha1",
		etcdPrefix: "/registry/butler.butlerlabs.dev/"}
	crd = side{name: "CRD", group: "crd.butlerlabs.dev", base: p.kube.Host + "/apis/crd.butlerlabs.dev/v1alpha1",
		etcdPrefix: "/registry/crd.butlerlabs.dev/"}
	return agg, crd
}

// namespaceName is the name of the i-th of the bench's namespaces (and, with Teams, its Team's).
func namespaceName(i int) string { return fmt.Sprintf("bench-%02d", i) }

// perNamespace is how many of keys(n, namespaces) fall in namespace i.
func perNamespace(n, namespaces, i int) int {
	c := n / namespaces
	if i < n%namespaces {
		c++
	}
	return c
}

// providerConfig is the ProviderConfig every bench TenantCluster names (harvester), in
// namespace ns of group: a valid one, without limits (the Team's quota is the figure's quota).
func providerConfig(group, ns string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"%s/v1alpha1","kind":"ProviderConfig","metadata":{"name":"harvester","namespace":%q},`+
		`"spec":{"provider":"harvester","credentialsRef":{"name":"harvester-kubeconfig","namespace":%[2]q,"key":"kubeconfig"},`+
		`"harvester":{"namespace":"default","networkName":"default/vlan40","imageName":"default/talos-1.9"}}}`, group, ns)
}

// team is the Team of namespace ns in group, at most maxClusters TenantClusters.
func team(group, ns string, maxClusters int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"%s/v1alpha1","kind":"Team","metadata":{"name":%q},`+
		`"spec":{"resourceLimits":{"maxClusters":%d}}}`, group, ns, maxClusters)
}

// prepareSides installs the CRD copy of Butler's API (from crds) beside the aggregated one and
// makes the namespaces. With teams, each namespace is a Team's on both sides (maxClusters
// limit(i), so aggregated creates pass the quota Ledger), holds a ProviderConfig harvester on both
// sides (which ProviderConfigUse reads on every aggregated create), and a ResourceQuota of
// limit(i) TenantClusters of the CRD side (kube-apiserver's quota admission: its
// compare-and-swap per create). The first object of each namespace is created on both sides
// before any clock, retried until both servers' admission knows the namespaces; it returns
// every key and those left to create.
func prepareSides(ctx context.Context, dyn dynamic.Interface, kube kubernetes.Interface, c *http.Client, crds string,
	n, namespaces int, agg, crd side, teams bool, limit func(i int) int) (all, timed []key, err error) {
	if err := installCRDs(ctx, dyn, crds, agg.group, crd.group); err != nil {
		return nil, nil, err
	}
	for i := range namespaces {
		name := namespaceName(i)
		if teams {
			for _, s := range []side{agg, crd} {
				if err := send(ctx, c, http.MethodPost, s.base+"/teams", contentJSON, team(s.group, name, limit(i)), http.StatusCreated); err != nil {
					return nil, nil, err
				}
			}
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, nil, err
		}
		if teams {
			for _, s := range []side{agg, crd} {
				if err := retry(ctx, func() error {
					return send(ctx, c, http.MethodPost, s.base+"/namespaces/"+name+"/providerconfigs", contentJSON, providerConfig(s.group, name), http.StatusCreated)
				}); err != nil {
					return nil, nil, fmt.Errorf("%s ProviderConfig: %w", s.name, err)
				}
			}
			if err := resourceQuota(ctx, kube, name, crd.group, limit(i)); err != nil {
				return nil, nil, err
			}
		}
	}
	all = keys(n, namespaces)
	first := all[:min(namespaces, n)]
	for _, s := range []side{agg, crd} {
		for _, k := range first {
			if err := retry(ctx, func() error {
				return send(ctx, c, http.MethodPost, s.collection(k.namespace), contentJSON, tenantCluster(s.group, k), http.StatusCreated)
			}); err != nil {
				return nil, nil, fmt.Errorf("first %s object: %w", s.name, err)
			}
		}
	}
	return all, all[len(first):], nil
}

// retry calls do every 250 ms for up to a minute, until it succeeds.
func retry(ctx context.Context, do func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := do()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// resourceQuota gives namespace ns a quota of max TenantClusters of group, with the status
// kube-controller-manager's quota controller would write first (the bench's plane does not run
// it); from there kube-apiserver's admission keeps status.used.
func resourceQuota(ctx context.Context, kube kubernetes.Interface, ns, group string, max int) error {
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: corev1.ResourceQuotaSpec{
		Hard: corev1.ResourceList{corev1.ResourceName("count/tenantclusters." + group): *resource.NewQuantity(int64(max), resource.DecimalSI)}}}
	created, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{}}
	for name := range quota.Spec.Hard {
		created.Status.Used[name] = *resource.NewQuantity(0, resource.DecimalSI)
	}
	_, err = kube.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}
