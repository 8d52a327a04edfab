package plane

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/providerconfig/credentialstest"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// providerBlocks are a minimal valid ProviderConfig spec per provider whose controllers do not
// run here (so the test plays Steward); the local provider's whole lifecycle is
// TestLocalTenantCluster's.
var providerBlocks = map[string]string{
	// In ipam mode Harvester and Nutanix clusters hold load balancer addresses only: their
	// machines cannot be handed addresses of their own.
	"harvester": `harvester: {namespace: default, networkName: default/vlan40, imageName: default/talos-1.9}
  network: {mode: ipam, poolRefs: [{name: lab}]}`,
	"nutanix": `nutanix: {endpoint: "https://prism.example:9440", clusterUUID: 00000000-0000-0000-0000-000000000001, subnetUUID: 00000000-0000-0000-0000-000000000002, imageUUID: 00000000-0000-0000-0000-000000000003}
  network: {mode: ipam, poolRefs: [{name: lab}]}`,
	// Proxmox machines take static addresses: from a pool (network mode ipam).
	"proxmox": `proxmox: {endpoint: "https://pve.example:8006", nodes: [pve1], storage: local-lvm, templateID: 9000}
  network: {mode: ipam, poolRefs: [{name: lab}], subnet: 10.78.0.0/24, gateway: 10.78.0.254, dnsServers: [10.78.0.254]}`,
	"aws":   `aws: {region: eu-west-1, vpcID: vpc-1, subnetIDs: [subnet-1], securityGroupIDs: [sg-1]}`,
	"azure": `azure: {subscriptionID: 00000000-0000-0000-0000-000000000004, resourceGroup: butler, location: westeurope, vnetName: butler, subnetName: nodes}`,
	"gcp":   `gcp: {projectID: butler-test, region: europe-west1, zone: europe-west1-b, network: default}`,
}

// providerOS is the workers' OS per provider in TestTenantClusterObjectsPerProvider, and the
// bootstrap format (Cluster API's data.format) its machines must be handed: both formats, and
// Ignition on the providers that deliver it.
var providerOS = map[string]struct{ os, format string }{
	"harvester": {"kairos", "cloud-config"},
	"nutanix":   {"talos", "cloud-config"},
	"proxmox":   {"flatcar", "ignition"},
	"aws":       {"flatcar", "ignition"},
	"azure":     {"flatcar", "ignition"},
	"gcp":       {"kairos", "cloud-config"},
}

var (
	bootstrapTemplatesGVR = framework.GVR("bootstrap.butlerlabs.dev", "v1alpha1", "bootstrapconfigtemplates")
	bootstrapConfigsGVR   = framework.GVR("bootstrap.butlerlabs.dev", "v1alpha1", "bootstrapconfigs")
)

// infraKinds are each provider's infrastructure cluster and worker template resources.
var infraKinds = map[string][2]schema.GroupVersionResource{
	"harvester": {framework.GVR("infrastructure.cluster.x-k8s.io", "v1alpha1", "kubevirtclusters"), framework.GVR("infrastructure.cluster.x-k8s.io", "v1alpha1", "kubevirtmachinetemplates")},
	"nutanix":   {framework.GVR("infrastructure.cluster.x-k8s.io", "v1beta1", "nutanixclusters"), framework.GVR("infrastructure.cluster.x-k8s.io", "v1beta1", "nutanixmachinetemplates")},
	"proxmox":   {framework.GVR("infrastructure.cluster.x-k8s.io", "v1alpha1", "proxmoxclusters"), framework.GVR("infrastructure.cluster.x-k8s.io", "v1alpha1", "proxmoxmachinetemplates")},
	"aws":       {framework.GVR("infrastructure.cluster.x-k8s.io", "v1beta2", "awsclusters"), framework.GVR("infrastructure.cluster.x-k8s.io", "v1beta2", "awsmachinetemplates")},
	"azure":     {framework.GVR("infrastructure.cluster.x-k8s.io", "v1beta1", "azureclusters"), framework.GVR("infrastructure.cluster.x-k8s.io", "v1beta1", "azuremachinetemplates")},
	"gcp":       {framework.GVR("infrastructure.cluster.x-k8s.io", "v1beta1", "gcpclusters"), framework.GVR("infrastructure.cluster.x-k8s.io", "v1beta1", "gcpmachinetemplates")},
}

// playSteward does what Steward does for a StewardControlPlane once its control plane serves: a
// TenantControlPlane <tc> reporting Ready at version, and its admin kubeconfig and CA Secrets.
// The management cluster itself stands in for the tenant (its kubeconfig and its CA), so what
// tenantclusters/kubeconfig answers can be used.
func playSteward(t *testing.T, tenantNS, name, version string) {
	t.Helper()
	ctx := context.Background()
	d := framework.DynamicClient(t)
	tcp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "steward.butlerlabs.dev/v1alpha1", "kind": "TenantControlPlane",
		"metadata": map[string]any{"name": name, "namespace": tenantNS},
		"spec": map[string]any{
			"controlPlane": map[string]any{"deployment": map[string]any{"replicas": int64(1)}, "service": map[string]any{"serviceType": "LoadBalancer"}},
			"kubernetes":   map[string]any{"version": version, "kubelet": map[string]any{"cgroupfs": "systemd"}},
			// Steward always writes it; the CRD's transition rules read it on every update.
			"networkProfile": map[string]any{},
		},
	}}
	created, err := d.Resource(framework.TenantCPGVR).Namespace(tenantNS).Create(ctx, tcp, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the TenantControlPlane: %v", err)
	}
	_ = unstructured.SetNestedField(created.Object, map[string]any{
		"controlPlaneEndpoint": "127.0.0.1:6443",
		"kubernetesResources":  map[string]any{"version": map[string]any{"version": version, "status": "Ready"}},
		"kubeconfig":           map[string]any{"admin": map[string]any{"secretName": name + "-admin-kubeconfig"}},
	}, "status")
	if _, err := d.Resource(framework.TenantCPGVR).Namespace(tenantNS).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the TenantControlPlane's status: %v", err)
	}
	ca, err := os.ReadFile(filepath.Join(framework.Plane.Dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := os.ReadFile(filepath.Join(framework.Plane.Dir, "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	framework.MustKubectl(t, "create", "secret", "generic", name+"-admin-kubeconfig", "-n", tenantNS, "--from-file=admin.conf="+framework.Plane.Kubeconfig)
	framework.MustKubectl(t, "create", "secret", "generic", name+"-ca", "-n", tenantNS,
		"--from-literal=ca.crt="+string(ca), "--from-literal=ca.key="+string(caKey))
}

// TestTenantClusterObjectsPerProvider: for a ProviderConfig of each of the six remote providers, a
// TenantCluster yields its objects, each accepted by the real CRD schema in the management
// cluster, walks its phases and conditions, and deleting it removes them all.
func TestTenantClusterObjectsPerProvider(t *testing.T) {
	framework.LongestFirst(t, 175*time.Second)
	ns := framework.Namespace(t, "e2e-providers")
	ctx := context.Background()
	d := framework.DynamicClient(t)
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: NetworkPool
metadata: {name: lab, namespace: %s}
spec: {cidr: 10.78.0.0/24}
`, ns))
	for p := range providerBlocks {
		creds := providerCredentials(t, ns, p)
		out := framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  provider: %[1]s
  %[3]s
  %[4]s
`, p, ns, creds, providerBlocks[p]))
		// ipam mode where machines cannot take addresses: the asker is told what it gives.
		warned := strings.Contains(out, "Warning: spec.network.mode: ipam gives "+p+" clusters load-balancer addresses from the pools, not node addresses")
		if wantWarning := p == "harvester" || p == "nutanix"; warned != wantWarning {
			t.Errorf("%s: kubectl apply of the ProviderConfig warned %v, want %v:\n%s", p, warned, wantWarning, out)
		}
		framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata: {name: tc-%[1]s, namespace: %[2]s}
spec:
  kubernetesVersion: v1.36.3
  providerConfigRef: {name: %[1]s}
  workers:
    replicas: 2
    machineTemplate: {os: {type: %[3]s}}
  addons:
    cni: {provider: cilium}
`, p, ns, providerOS[p].os))
	}
	type made struct{ tenantNS string }
	clusters := map[string]made{}
	for p := range providerBlocks {
		name := "tc-" + p
		tc := framework.WaitCluster(t, ns, name, 60*time.Second, "control plane objects written", func(tc *v1alpha1.TenantCluster) bool {
			return tc.Status.TenantNamespace != "" && tc.Status.Phase == v1alpha1.TenantClusterProvisioning &&
				meta.IsStatusConditionTrue(tc.Status.Conditions, "NetworkReady") &&
				waitingForSteward(meta.FindStatusCondition(tc.Status.Conditions, "ControlPlaneReady"))
		})
		tenantNS := tc.Status.TenantNamespace
		clusters[p] = made{tenantNS}
		if want := name + "-" + string(tc.UID)[:8]; tenantNS != want {
			t.Errorf("%s: tenant namespace %q, want %q", p, tenantNS, want)
		}
		for _, r := range []schema.GroupVersionResource{framework.ClustersGVR, framework.StewardCPGVR, infraKinds[p][0]} {
			if _, err := d.Resource(r).Namespace(tenantNS).Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Errorf("%s: %s %s/%s: %v", p, r.Resource, tenantNS, name, err)
			}
		}
		if _, err := d.Resource(infraKinds[p][1]).Namespace(tenantNS).Get(ctx, name+"-workers", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: worker template: %v", p, err)
		}
		checkNodeAddresses(t, d, p, ns, tc)
		if _, err := d.Resource(framework.MachineDeploymentsGVR).Namespace(tenantNS).Get(ctx, name+"-workers", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the MachineDeployment exists before the control plane is ready (err %v)", p, err)
		}
		out := framework.MustKubectl(t, "get", "tc", name, "-n", ns)
		if !strings.Contains(out, "Provisioning") || !strings.Contains(out, "StewardControlPlane provider") {
			t.Errorf("%s: kubectl get tc does not show the progress:\n%s", p, out)
		}

		// Steward brings the control plane up: the workers and addons follow.
		playSteward(t, tenantNS, name, "v1.36.3")
		tc = framework.WaitCluster(t, ns, name, 60*time.Second, "workers and addons written", func(tc *v1alpha1.TenantCluster) bool {
			c := meta.FindStatusCondition(tc.Status.Conditions, "WorkersReady")
			return meta.IsStatusConditionTrue(tc.Status.Conditions, "ControlPlaneReady") && c != nil && c.Reason == "WorkersNotReady"
		})
		if tc.Status.ControlPlaneEndpoint != "127.0.0.1:6443" || tc.Status.KubeconfigSecretRef == nil ||
			tc.Status.KubeconfigSecretRef.Name != name+"-admin-kubeconfig" || tc.Status.ObservedState.KubernetesVersion != "v1.36.3" {
			t.Errorf("%s: status after the control plane: %+v", p, tc.Status)
		}
		for _, r := range []schema.GroupVersionResource{framework.MachineDeploymentsGVR, bootstrapTemplatesGVR} {
			if _, err := d.Resource(r).Namespace(tenantNS).Get(ctx, name+"-workers", metav1.GetOptions{}); err != nil {
				t.Errorf("%s: %s %s/%s-workers: %v", p, r.Resource, tenantNS, name, err)
			}
		}
		if _, err := framework.Plane.Butler.ButlerV1alpha1().TenantAddons(ns).Get(ctx, name+"-cilium", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: the cni TenantAddon: %v", p, err)
		}

		// The control plane and infrastructure providers report what theirs would: each Machine
		// gets its bootstrap data in the format its provider reads.
		playProviders(t, p, tenantNS, name, "v1.36.3")
		checkBootstrapFormat(t, p, tenantNS, 2)
	}

	// kubectl scale moves the MachineDeployment.
	framework.MustKubectl(t, "scale", "tc", "tc-aws", "-n", ns, "--replicas=4")
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		md, err := d.Resource(framework.MachineDeploymentsGVR).Namespace(clusters["aws"].tenantNS).Get(ctx, "tc-aws-workers", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		r, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas")
		return r == 4, nil
	})
	if err != nil {
		t.Errorf("kubectl scale tc did not move the MachineDeployment's replicas to 4: %v", err)
	}

	// Deleting a TenantCluster removes everything it made, then the cluster itself.
	for p := range providerBlocks {
		framework.MustKubectl(t, "delete", "tc", "tc-"+p, "-n", ns, "--wait=false")
	}
	for p, m := range clusters {
		name := "tc-" + p
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			tc, _ := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
			t.Errorf("%s: not gone after delete: %s", p, framework.StatusOf(tc))
			continue
		}
		if _, err := framework.Plane.Kube.CoreV1().Namespaces().Get(ctx, m.tenantNS, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: tenant namespace %s still there (err %v)", p, m.tenantNS, err)
		}
		for _, r := range []schema.GroupVersionResource{framework.ClustersGVR, framework.StewardCPGVR, framework.MachineDeploymentsGVR, infraKinds[p][0]} {
			list, err := d.Resource(r).Namespace(m.tenantNS).List(ctx, metav1.ListOptions{})
			if err == nil && len(list.Items) > 0 {
				t.Errorf("%s: %d %s left in %s", p, len(list.Items), r.Resource, m.tenantNS)
			}
		}
		if _, err := framework.Plane.Butler.ButlerV1alpha1().TenantAddons(ns).Get(ctx, name+"-cilium", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the cni TenantAddon is still there (err %v)", p, err)
		}
	}
}

// TestTenantClusterRecoversOnceItsProviderConfigExists: a missing ProviderConfig is a Failed
// cluster with a condition naming it; creating it (in ipam mode, with a pool) lets the cluster
// go on by itself, holding addresses that its deletion gives back.
func TestTenantClusterRecoversOnceItsProviderConfigExists(t *testing.T) {
	ns := framework.Namespace(t, "e2e-recover")
	ctx := context.Background()
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata: {name: late, namespace: %s}
spec:
  kubernetesVersion: v1.36.3
  providerConfigRef: {name: later}
  workers: {replicas: 3, machineTemplate: {os: {type: talos}}}
  networking: {lbPoolSize: 4}
`, ns))
	tc := framework.WaitCluster(t, ns, "late", 30*time.Second, "Failed naming the ProviderConfig", func(tc *v1alpha1.TenantCluster) bool {
		c := meta.FindStatusCondition(tc.Status.Conditions, "Ready")
		return tc.Status.Phase == v1alpha1.TenantClusterFailed && c != nil && c.Reason == "ProviderConfigNotFound"
	})
	if c := meta.FindStatusCondition(tc.Status.Conditions, "Ready"); !strings.Contains(c.Message, "ProviderConfig "+ns+"/later does not exist") {
		t.Errorf("Ready message %q does not name the ProviderConfig", c.Message)
	}
	if out := framework.MustKubectl(t, "describe", "tc", "late", "-n", ns); !strings.Contains(out, "ProviderConfigNotFound") {
		t.Errorf("kubectl describe does not show the reason:\n%s", out)
	}

	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: NetworkPool
metadata: {name: lab, namespace: %[1]s}
spec: {cidr: 10.77.0.0/24}
---
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: later, namespace: %[1]s}
spec:
  provider: aws
  credentialsRef: {name: %[1]s-aws-credentials, namespace: butler-system}
  aws: {region: eu-west-1}
  network: {mode: ipam, poolRefs: [{name: lab}]}
`, ns))
	// Not ready while its credentials Secret is missing, and the cluster says so.
	framework.WaitCluster(t, ns, "late", 30*time.Second, "ProviderConfigNotReady", func(tc *v1alpha1.TenantCluster) bool {
		c := meta.FindStatusCondition(tc.Status.Conditions, "Ready")
		return c != nil && c.Reason == "ProviderConfigNotReady" && strings.Contains(c.Message, "aws-credentials")
	})
	providerCredentials(t, ns, "aws")
	framework.MustKubectl(t, "annotate", "providerconfig", "later", "-n", ns, "touched=now") // the Secret is not watched
	tc = framework.WaitCluster(t, ns, "late", 30*time.Second, "addresses held", func(tc *v1alpha1.TenantCluster) bool {
		return meta.IsStatusConditionTrue(tc.Status.Conditions, "NetworkReady") && tc.Status.Phase == v1alpha1.TenantClusterProvisioning
	})
	// AWS gives node addresses from its subnets: only the load balancer's come from the pool.
	if len(tc.Status.IPAllocationRefs) != 1 {
		t.Errorf("ipAllocationRefs %v, want the load balancer's", tc.Status.IPAllocationRefs)
	}
	allocs, err := framework.Plane.Butler.ButlerV1alpha1().IPAllocations(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held := int64(0)
	for _, a := range allocs.Items {
		if a.Status.Phase != v1alpha1.IPAllocationAllocated {
			t.Errorf("IPAllocation %s is %s", a.Name, a.Status.Phase)
		}
		held += a.Status.AllocatedCount
	}
	if held != 4 {
		t.Errorf("%d addresses held, want 4 for the load balancer", held)
	}

	framework.MustKubectl(t, "delete", "tc", "late", "-n", ns)
	allocs, err = framework.Plane.Butler.ButlerV1alpha1().IPAllocations(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(allocs.Items) != 0 {
		t.Errorf("IPAllocations left after the cluster's deletion: %d (%v)", len(allocs.Items), err)
	}
	pool, err := framework.Plane.Butler.ButlerV1alpha1().NetworkPools(ns).Get(ctx, "lab", metav1.GetOptions{})
	if err != nil || pool.Status.AllocatedIPs != 0 {
		t.Errorf("pool still holds %d addresses (%v)", pool.Status.AllocatedIPs, err)
	}
}

// playProviders writes the status that Steward's Cluster API control plane provider and provider
// p's infrastructure provider would write once theirs are up (Cluster API's v1beta1 contract, as
// both implement it), so that Cluster API makes the Machines and the bootstrap provider their data.
func playProviders(t *testing.T, p, tenantNS, name, version string) {
	t.Helper()
	d := framework.DynamicClient(t)
	patches := []struct {
		r      schema.GroupVersionResource
		status map[string]any
	}{
		{framework.StewardCPGVR, map[string]any{"externalManagedControlPlane": true, "initialized": true, "ready": true, "version": version,
			"replicas": 1, "readyReplicas": 1, "updatedReplicas": 1, "unavailableReplicas": 0,
			"selector": "cluster.x-k8s.io/cluster-name=" + name}},
		{infraKinds[p][0], map[string]any{"ready": true}},
	}
	for _, pt := range patches {
		patch, _ := json.Marshal(map[string]any{"status": pt.status})
		if _, err := d.Resource(pt.r).Namespace(tenantNS).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("%s: writing %s %s/%s status: %v", p, pt.r.Resource, tenantNS, name, err)
		}
	}
	// The control plane provider writes its endpoint into the infrastructure cluster (as the local
	// provider's does), and Cluster API copies it into the Cluster.
	endpoint, _ := json.Marshal(map[string]any{"spec": map[string]any{"controlPlaneEndpoint": map[string]any{"host": "127.0.0.1", "port": 6443}}})
	if _, err := d.Resource(infraKinds[p][0]).Namespace(tenantNS).Patch(context.Background(), name, types.MergePatchType, endpoint, metav1.PatchOptions{}); err != nil {
		t.Fatalf("%s: writing the %s's controlPlaneEndpoint: %v", p, infraKinds[p][0].Resource, err)
	}
	// Cluster API's <cluster>-kubeconfig, which the control plane provider writes; the stand-in
	// tenant is the management cluster, as in playSteward.
	framework.MustKubectl(t, "create", "secret", "generic", name+"-kubeconfig", "-n", tenantNS, "--from-file=value="+framework.Plane.Kubeconfig)
}

// checkBootstrapFormat waits for want bootstrap data Secrets in tenantNS and checks each carries
// Cluster API's data.format for the OS of provider p's workers, beside a non-empty value.
func checkBootstrapFormat(t *testing.T, p, tenantNS string, want int) {
	t.Helper()
	ctx := context.Background()
	var got []corev1.Secret
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := framework.DynamicClient(t).Resource(bootstrapConfigsGVR).Namespace(tenantNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		got = got[:0]
		for _, bc := range list.Items {
			secret, _, _ := unstructured.NestedString(bc.Object, "status", "dataSecretName")
			if secret == "" {
				continue
			}
			s, err := framework.Plane.Kube.CoreV1().Secrets(tenantNS).Get(ctx, secret, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			got = append(got, *s)
		}
		return len(got) >= want, nil
	})
	if err != nil {
		out, _ := framework.Kubectl(t, "get", "clusters.cluster.x-k8s.io,machines.cluster.x-k8s.io,bootstrapconfigs.bootstrap.butlerlabs.dev", "-n", tenantNS, "-o", "yaml")
		t.Fatalf("%s: %d of %d machines got bootstrap data: %v\n%s", p, len(got), want, err, out)
	}
	for _, s := range got {
		if f := string(s.Data["format"]); f != providerOS[p].format || len(s.Data["value"]) == 0 {
			t.Errorf("%s: bootstrap Secret %s: format %q and %d bytes of value, want format %q for %s",
				p, s.Name, f, len(s.Data["value"]), providerOS[p].format, providerOS[p].os)
		}
	}
}

// checkNodeAddresses: in ipam mode, the nodes IPAllocation is in the machine specs of the
// provider that takes static addresses (Proxmox: the ProxmoxCluster's ipv4Config pool, from
// which CAPMOX gives each machine one), and no other provider holds one; their NetworkReady
// says why their nodes have none.
func checkNodeAddresses(t *testing.T, d dynamic.Interface, p, ns string, tc *v1alpha1.TenantCluster) {
	t.Helper()
	ctx := context.Background()
	nodes, err := framework.Plane.Butler.ButlerV1alpha1().IPAllocations(ns).Get(ctx, tc.Status.TenantNamespace+"-nodes", metav1.GetOptions{})
	network := meta.FindStatusCondition(tc.Status.Conditions, "NetworkReady")
	switch p {
	case "proxmox":
		// Two workers and the one more machine a rollout makes.
		if err != nil || nodes.Status.Phase != v1alpha1.IPAllocationAllocated || nodes.Status.AllocatedCount != 3 {
			t.Fatalf("proxmox: nodes IPAllocation %+v (%v), want 3 addresses allocated", nodes, err)
		}
		pmc, err := d.Resource(infraKinds[p][0]).Namespace(tc.Status.TenantNamespace).Get(ctx, tc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		addrs, _, _ := unstructured.NestedStringSlice(pmc.Object, "spec", "ipv4Config", "addresses")
		want := nodes.Status.StartAddress + "-" + nodes.Status.EndAddress
		if len(addrs) != 1 || addrs[0] != want {
			t.Errorf("proxmox: ProxmoxCluster spec.ipv4Config.addresses %v, want [%s] (the nodes IPAllocation)", addrs, want)
		}
	case "harvester", "nutanix":
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: a nodes IPAllocation is held (err %v) though no machine can take it", p, err)
		}
		if network == nil || !strings.Contains(network.Message, "no node addresses from the pools ("+p+" machines cannot take them") {
			t.Errorf("%s: NetworkReady %+v does not say why the nodes have no addresses", p, network)
		}
	}
}

// providerCredentials makes a credentials Secret <ns>-<p>-credentials in butler-system (where
// butler-apiserver may read credentials) in the shape provider p's Cluster API provider reads
// (made-up values: nothing calls a cloud), and the identity object its infrastructure cluster
// names (AWS, Azure); it returns the ProviderConfig's credentialsRef line.
func providerCredentials(t *testing.T, ns, p string) string {
	t.Helper()
	const secretNS = "butler-system"
	name := ns + "-" + p + "-credentials"
	data, key, err := credentialstest.Data(p)
	if err != nil {
		t.Fatal(err)
	}
	switch p {
	case "aws":
		framework.MustApply(t, fmt.Sprintf(`apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSClusterStaticIdentity
metadata: {name: %s}
spec: {secretRef: %s}
`, name, name))
		t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "awsclusterstaticidentity", name, "--wait=false") })
	case "azure":
		framework.MustApply(t, fmt.Sprintf(`apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureClusterIdentity
metadata: {name: %[1]s, namespace: %[2]s}
spec: {type: ServicePrincipal, clientID: 00000000-0000-0000-0000-000000000005, tenantID: 00000000-0000-0000-0000-000000000006, clientSecret: {name: %[1]s, namespace: %[2]s}}
`, name, secretNS))
		t.Cleanup(func() {
			_, _ = framework.Kubectl(t, "delete", "azureclusteridentity", name, "-n", secretNS, "--wait=false")
		})
	}
	args := []string{"create", "secret", "generic", name, "-n", secretNS}
	for k, v := range data {
		args = append(args, "--from-literal="+k+"="+v)
	}
	framework.MustKubectl(t, args...)
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "secret", name, "-n", secretNS, "--wait=false") })
	if key == "" {
		return fmt.Sprintf("credentialsRef: {name: %s, namespace: %s}", name, secretNS)
	}
	return fmt.Sprintf("credentialsRef: {name: %s, namespace: %s, key: %s}", name, secretNS, key)
}

// waitingForSteward: no Steward runs on this plane, so a cluster waits for its TenantControlPlane,
// and after 90 s says its provider has not acted (the clusters are checked one after another).
func waitingForSteward(c *metav1.Condition) bool {
	return c != nil && (c.Reason == "WaitingForTenantControlPlane" || c.Reason == "ProviderNotResponding")
}
