package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/providerconfig/credentialstest"
)

// credentialsNamespace holds the ProviderConfig's credentials Secret.
const credentialsNamespace = "butler-system"

var (
	stewardControlPlanes = schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: "v1alpha1", Resource: "stewardcontrolplanes"}
	tenantControlPlanes  = schema.GroupVersionResource{Group: "steward.butlerlabs.dev", Version: "v1alpha1", Resource: "tenantcontrolplanes"}
)

// runLifecycle measures the TenantCluster worker: n TenantClusters (AWS, two workers, a CNI
// addon) created at once by 16 clients, until every one has all its objects written —
// namespace, Cluster, StewardControlPlane, AWSCluster and template, then, once a stand-in for
// Steward reports each control plane Ready, BootstrapConfigTemplate, MachineDeployment and
// TenantAddon — and then until all n are deleted and gone; with butler-apiserver's CPU time
// and RSS over each phase.
func runLifecycle(ctx context.Context, p *plane, n int, out string) error {
	butler, kube, dyn := p.unthrottledClients()
	ns := "bench-lifecycle"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	// Credentials of CAPA's shape and the identity the AWSCluster names: ProviderConfig
	// readiness checks both. The Secret is in butler-system: butler reads Secrets only there
	// and in the tenant namespaces it made.
	creds, _, _ := credentialstest.Data("aws")
	if _, err := kube.CoreV1().Secrets(credentialsNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bench-aws"},
		StringData: creds}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	identity := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSClusterStaticIdentity",
		"metadata": map[string]any{"name": "bench-aws"}, "spec": map[string]any{"secretRef": "bench-aws"}}}
	awsIdentities := schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Resource: "awsclusterstaticidentities"}
	if _, err := dyn.Resource(awsIdentities).Create(ctx, identity, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: ns},
		Spec: v1alpha1.ProviderConfigSpec{Provider: v1alpha1.ProviderAWS,
			CredentialsRef: &v1alpha1.SecretKeyReference{Name: "bench-aws", Namespace: credentialsNamespace},
			AWS:            &v1alpha1.AWSConfig{Region: "eu-west-1"}}}
	if _, err := butler.ButlerV1alpha1().ProviderConfigs(ns).Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := butler.ButlerV1alpha1().ProviderConfigs(ns).Get(ctx, "aws", metav1.GetOptions{})
		return err == nil && got.Status.Ready, nil
	}); err != nil {
		return fmt.Errorf("the ProviderConfig never became ready: %w", err)
	}
	admin, err := os.ReadFile(filepath.Join(p.dir, "admin.kubeconfig"))
	if err != nil {
		return err
	}
	stopSteward := playSteward(ctx, kube, dyn, admin)
	defer stopSteward()

	butlerPID, err := p.pid("butler-apiserver")
	if err != nil {
		return err
	}
	cpu0, _ := cpuTime(butlerPID)
	mem0, _ := residentMemory(butlerPID)
	req0, err := p.scrapeClientRequests(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tc-%04d", i), Namespace: ns},
					Spec: v1alpha1.TenantClusterSpec{KubernetesVersion: "v1.36.3",
						ProviderConfigRef: &v1alpha1.NamespacedObjectReference{Name: "aws"},
						Workers:           v1alpha1.WorkersSpec{Replicas: 2},
						Addons:            v1alpha1.AddonsSpec{CNI: &v1alpha1.CNIAddon{Provider: "cilium"}}}}
				if _, err := butler.ButlerV1alpha1().TenantClusters(ns).Create(ctx, tc, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	created := time.Since(start)
	written := func(tc *v1alpha1.TenantCluster) bool {
		c := meta.FindStatusCondition(tc.Status.Conditions, "WorkersReady")
		return c != nil && c.Reason == "WorkersNotReady" && len(tc.Status.ObservedState.Addons) == 1
	}
	if err := waitAll(ctx, butler, ns, n, 20*time.Minute, written); err != nil {
		return err
	}
	allWritten := time.Since(start)
	cpu1, _ := cpuTime(butlerPID)
	mem1, _ := residentMemory(butlerPID)
	req1, err := p.scrapeClientRequests(ctx)
	if err != nil {
		return err
	}
	sent := req1.sub(req0)

	dstart := time.Now()
	if err := butler.ButlerV1alpha1().TenantClusters(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 20*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := butler.ButlerV1alpha1().TenantClusters(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	}); err != nil {
		return fmt.Errorf("the clusters were not all gone: %w", err)
	}
	deleted := time.Since(dstart)
	cpu2, _ := cpuTime(butlerPID)

	table := fmt.Sprintf(`| figure (%d TenantClusters, AWS provider, Steward played by the bench) | value |
|---|---|
| created (16 clients) | %s |
| created -> every cluster's objects written (namespace, Cluster, StewardControlPlane, AWSCluster, templates, MachineDeployment, TenantAddon) | %s (%.1f ms per cluster) |
| butler-apiserver CPU while writing them | %s (%.1f ms per cluster) |
| butler-apiserver RSS before / after | %s / %s |
| butler-apiserver's requests while writing them, per cluster: writes (POST, PUT, PATCH, DELETE) / reads | %.1f (%s) / %.1f |
| time butler-apiserver's requests waited in the client-side rate limiter (summed) | %.1f s |
| delete all -> all gone (addons, workers, control plane, infrastructure, namespaces) | %s |
| butler-apiserver CPU while deleting | %s |
`, n, created.Round(time.Millisecond), allWritten.Round(time.Millisecond), float64(allWritten.Milliseconds())/float64(n),
		(cpu1 - cpu0).Round(time.Millisecond), float64((cpu1-cpu0).Milliseconds())/float64(n),
		mib(mem0.rss), mib(mem1.rss),
		sent.total(sent.writes)/float64(n), sent.byHost(n), sent.total(sent.reads)/float64(n), sent.throttled,
		deleted.Round(time.Millisecond), (cpu2 - cpu1).Round(time.Millisecond))
	fmt.Print(table)
	return os.WriteFile(filepath.Join(out, fmt.Sprintf("lifecycle-n%d.md", n)), []byte(table), 0o644)
}

func waitAll(ctx context.Context, butler clientset.Interface, ns string, n int, timeout time.Duration, ok func(*v1alpha1.TenantCluster) bool) error {
	var done int
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := butler.ButlerV1alpha1().TenantClusters(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		done = 0
		for i := range list.Items {
			if ok(&list.Items[i]) {
				done++
			}
		}
		return done == n, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d clusters reached the state: %w", done, n, err)
	}
	return nil
}

// playSteward stands in for Steward: for every StewardControlPlane it makes the TenantControlPlane
// of the same name Ready, with the admin kubeconfig Secret (the management cluster's own).
func playSteward(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, admin []byte) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	inf := factory.ForResource(stewardControlPlanes).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		scp := obj.(*unstructured.Unstructured)
		go func() {
			ns, name := scp.GetNamespace(), scp.GetName()
			version, _, _ := unstructured.NestedString(scp.Object, "spec", "version")
			tcp := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "steward.butlerlabs.dev/v1alpha1", "kind": "TenantControlPlane",
				"metadata": map[string]any{"name": name, "namespace": ns},
				"spec": map[string]any{
					"controlPlane": map[string]any{"deployment": map[string]any{"replicas": int64(1)}, "service": map[string]any{"serviceType": "LoadBalancer"}},
					"kubernetes":   map[string]any{"version": version, "kubelet": map[string]any{"cgroupfs": "systemd"}},
					// Steward always writes it; the CRD's transition rules read it on every update.
					"networkProfile": map[string]any{},
				}}}
			created, err := dyn.Resource(tenantControlPlanes).Namespace(ns).Create(ctx, tcp, metav1.CreateOptions{})
			if err != nil {
				if !apierrors.IsAlreadyExists(err) {
					logf("steward stand-in: %v", err)
				}
				return
			}
			_ = unstructured.SetNestedField(created.Object, map[string]any{
				"controlPlaneEndpoint": "127.0.0.1:6443",
				"kubernetesResources":  map[string]any{"version": map[string]any{"version": version, "status": "Ready"}},
			}, "status")
			_, _ = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-admin-kubeconfig"},
				Data: map[string][]byte{"admin.conf": admin}}, metav1.CreateOptions{})
			if _, err := dyn.Resource(tenantControlPlanes).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				logf("steward stand-in: %v", err)
			}
		}()
	}})
	factory.Start(ctx.Done())
	return cancel
}
