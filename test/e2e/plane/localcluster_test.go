package plane

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
	"github.com/butlerdotdev/butler-apiserver/test/localplane"
)

// localCluster applies a local ProviderConfig and a TenantCluster of workers machines of os
// at version.
func localCluster(t *testing.T, ns, name, version string, os bootstrap.OS, workers int) {
	t.Helper()
	framework.MustApply(t, framework.LocalProviderConfigManifest(ns)+framework.LocalClusterManifest(ns, name, version, os, workers))
}

// readyNodes lists the tenant's Nodes that are Ready.
func readyNodes(ctx context.Context, tenant kubernetes.Interface) ([]corev1.Node, error) {
	nodes, err := tenant.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var ready []corev1.Node
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = append(ready, n)
			}
		}
	}
	return ready, nil
}

// TestLocalTenantCluster is the whole lifecycle on the local provider, driven only through the
// management cluster as a user drives it: a TenantCluster of two Talos workers becomes Ready
// (the production controllers, the real Cluster API manager, butler's bootstrap provider and
// butler-localprovider), the kubeconfig the subresource mints lists two Ready Nodes that joined
// with their bootstrap data, a Deployment gets Running pods, a TenantAddon's chart is installed
// with Helm and its Deployment runs, kubectl scale gives a third Node, and kubectl delete leaves
// no process, no etcd key under the tenant's prefix and no namespace.
func TestLocalTenantCluster(t *testing.T) {
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-local")
	const name = "demo"
	created := time.Now()
	localCluster(t, ns, name, framework.PinnedVersion, bootstrap.OSTalos, 2)

	framework.WaitCluster(t, ns, name, 3*time.Minute, "control plane ready", func(tc *v1alpha1.TenantCluster) bool {
		return meta.IsStatusConditionTrue(tc.Status.Conditions, "ControlPlaneReady")
	})
	cpReady := time.Since(created)
	tc := framework.WaitReady(t, ns, name, 2, 4*time.Minute)
	t.Logf("create -> control plane ready %s, -> Ready with 2 workers %s", cpReady.Round(100*time.Millisecond), time.Since(created).Round(100*time.Millisecond))
	if tc.Status.ControlPlaneEndpoint == "" || tc.Status.KubeconfigSecretRef == nil || tc.Status.TenantNamespace == "" {
		t.Errorf("status of a Ready cluster: %+v", tc.Status)
	}
	for _, c := range []string{"NetworkReady", "ControlPlaneReady", "InfrastructureReady", "WorkersReady", "AddonsReady"} {
		if !meta.IsStatusConditionTrue(tc.Status.Conditions, c) {
			t.Errorf("condition %s is not True: %s", c, framework.StatusOf(tc))
		}
	}
	out := framework.MustKubectl(t, "get", "tc", name, "-n", ns)
	if !strings.Contains(out, "Ready") || !strings.Contains(out, "2/2") {
		t.Errorf("kubectl get tc:\n%s", out)
	}

	// What a user gets from the subresource works, and its nodes joined with their own data.
	kubeconfig, tenant := framework.MintKubeconfig(t, ns, name)
	nodes, err := readyNodes(ctx, tenant)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("Ready nodes in the tenant: %d (%v)", len(nodes), err)
	}
	for _, n := range nodes {
		if !strings.HasPrefix(n.Spec.ProviderID, "local://") {
			t.Errorf("node %s: providerID %q", n.Name, n.Spec.ProviderID)
		}
	}
	if out, err := framework.KubectlAs(t, kubeconfig, "", "get", "nodes", "--no-headers"); err != nil || strings.Count(out, " Ready ") != 2 {
		t.Errorf("kubectl get nodes with the minted kubeconfig: %v\n%s", err, out)
	}

	// A Deployment's pods run on the simulated nodes.
	if out, err := framework.KubectlAs(t, kubeconfig, "", "create", "deployment", "hello", "--image=registry.k8s.io/pause:3.10", "--replicas=2"); err != nil {
		t.Fatalf("creating a Deployment in the tenant: %v\n%s", err, out)
	}
	if out, err := framework.KubectlAs(t, kubeconfig, "", "rollout", "status", "deployment/hello", "--timeout=90s"); err != nil {
		t.Fatalf("the Deployment did not roll out: %v\n%s", err, out)
	}

	// A TenantAddon: the chart, served by the test, is installed by the TenantAddon controller into
	// the tenant, where its Deployment runs on the simulated nodes; Helm, asked with the minted
	// kubeconfig, agrees with the addon's status.
	repo := addonChartRepo(t, map[string][]string{"demo": {"0.1.0"}, "broken": {"0.1.0"}})
	// The platform lists the repository (an AddonDefinition), which allows its host:port on
	// loopback to butler-apiserver's fetch policy.
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: AddonDefinition
metadata: {name: %s-demo}
spec:
  displayName: Demo
  category: other
  chart: {repository: %q, name: demo, defaultVersion: 0.1.0}
`, name, repo))
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "addondefinition", name+"-demo", "--wait=false") })
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantAddon
metadata: {name: demo-app, namespace: %s}
spec:
  clusterRef: {name: %s}
  helm: {repository: %q, chart: demo, namespace: demo, createNamespace: true}
  version: 0.1.0
  values: {deployment: {enabled: true}}
`, ns, name, repo))
	addon := &v1alpha1.TenantAddon{}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := framework.Plane.Butler.ButlerV1alpha1().TenantAddons(ns).Get(ctx, "demo-app", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		addon = got
		return addon.Status.Phase == v1alpha1.TenantAddonInstalled && addon.Status.HelmRelease != nil, nil
	})
	if err != nil {
		t.Fatalf("the TenantAddon is not Installed: %+v", addon.Status)
	}
	if out, err := framework.KubectlAs(t, kubeconfig, "", "rollout", "status", "deployment/"+addon.Status.HelmRelease.Name, "-n", "demo", "--timeout=90s"); err != nil {
		t.Errorf("the addon's Deployment did not roll out in the tenant: %v\n%s", err, out)
	}
	flags := genericclioptions.NewConfigFlags(false)
	release := addon.Status.HelmRelease
	flags.KubeConfig, flags.Namespace = &kubeconfig, &release.Namespace
	helmCfg := &action.Configuration{}
	if err := helmCfg.Init(flags, release.Namespace, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	rel, err := action.NewStatus(helmCfg).Run(release.Name)
	if err != nil {
		t.Fatalf("helm status %s: %v", release.Name, err)
	}
	if rel.Version != int(release.Revision) || string(rel.Info.Status) != release.Status || rel.Chart.Metadata.Version != release.Version {
		t.Errorf("helm status: revision %d %s chart %s; the addon's status says %+v", rel.Version, rel.Info.Status, rel.Chart.Metadata.Version, release)
	}
	framework.WaitReady(t, ns, name, 2, time.Minute) // AddonsReady counts the user's addon too

	// A chart the tenant refuses: the addon is Failed with Helm's message, the cluster is not
	// Ready while it is there, and Ready again once it is deleted.
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantAddon
metadata: {name: broken, namespace: %s}
spec:
  clusterRef: {name: %s}
  helm: {repository: %q, chart: broken, namespace: broken, createNamespace: true}
  version: 0.1.0
`, ns, name, repo))
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := framework.Plane.Butler.ButlerV1alpha1().TenantAddons(ns).Get(ctx, "broken", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		addon = got
		return addon.Status.Phase == v1alpha1.TenantAddonFailed, nil
	})
	if err != nil || !strings.Contains(addon.Status.Message, `ConfigMap "Not_A_Valid_Name" is invalid`) {
		t.Errorf("the broken addon: %v; status %+v", err, addon.Status)
	}
	framework.WaitCluster(t, ns, name, time.Minute, "not Ready with a failed addon", func(tc *v1alpha1.TenantCluster) bool {
		return tc.Status.Phase != v1alpha1.TenantClusterReady && !meta.IsStatusConditionTrue(tc.Status.Conditions, "AddonsReady")
	})
	framework.MustKubectl(t, "delete", "tenantaddon", "broken", "-n", ns)
	framework.WaitReady(t, ns, name, 2, time.Minute)

	// A Team's chart (named by repository) that binds cluster-admin fails before anything is
	// installed; a repository on loopback that the platform does not list is refused.
	unlisted := addonChartRepo(t, map[string][]string{"demo": {"0.1.0"}})
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantAddon
metadata: {name: escalate, namespace: %[1]s}
spec:
  clusterRef: {name: %[2]s}
  helm: {repository: %[3]q, chart: demo, namespace: escalate, createNamespace: true}
  version: 0.1.0
  values: {rbac: {clusterAdmin: true}}
---
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantAddon
metadata: {name: unlisted, namespace: %[1]s}
spec:
  clusterRef: {name: %[2]s}
  helm: {repository: %[4]q, chart: demo, namespace: unlisted, createNamespace: true}
  version: 0.1.0
`, ns, name, repo, unlisted))
	for addon, want := range map[string]string{
		"escalate": "grants more than edit, which a chart from a repository (not a platform AddonDefinition) may not: ClusterRoleBinding escalate-cluster-admin binds ClusterRole cluster-admin",
		"unlisted": "fetching " + unlisted + "/index.yaml: refused: ",
	} {
		var got *v1alpha1.TenantAddon
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err = framework.Plane.Butler.ButlerV1alpha1().TenantAddons(ns).Get(ctx, addon, metav1.GetOptions{})
			return err == nil && got.Status.Phase == v1alpha1.TenantAddonFailed, nil
		})
		if err != nil || !strings.Contains(got.Status.Message, want) {
			t.Errorf("TenantAddon %s: %v; status %+v, want Failed saying %q", addon, err, got.Status, want)
		}
	}
	if _, err := tenant.RbacV1().ClusterRoleBindings().Get(ctx, "escalate-cluster-admin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused chart's ClusterRoleBinding in the tenant: %v", err)
	}
	if _, err := tenant.CoreV1().Namespaces().Get(ctx, "escalate", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused chart's namespace in the tenant: %v", err)
	}
	framework.MustKubectl(t, "delete", "tenantaddon", "escalate", "unlisted", "-n", ns)
	framework.WaitReady(t, ns, name, 2, time.Minute)

	// kubectl scale gives a third node.
	framework.MustKubectl(t, "scale", "tc", name, "-n", ns, "--replicas=3")
	framework.WaitReady(t, ns, name, 3, 3*time.Minute)
	if nodes, err := readyNodes(ctx, tenant); err != nil || len(nodes) != 3 {
		t.Errorf("Ready nodes after scaling to 3: %d (%v)", len(nodes), err)
	}

	// Deletion: everything it made goes, the processes and the tenant's data too.
	tcp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(tcp.GetUID())
	pids := framework.TenantPids(t, filepath.Join(framework.Plane.Dir, "tenants", uid))
	if len(pids) != 3 {
		t.Fatalf("tenant processes: %v", pids)
	}
	etcd := framework.TenantEtcd(t, pids["kube-apiserver"])
	framework.MustKubectl(t, "delete", "tc", name, "-n", ns, "--wait=false")
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		tc, _ := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		t.Fatalf("not gone after delete: %s", framework.StatusOf(tc))
	}
	for c, pid := range pids {
		if localplane.Alive(pid) {
			t.Errorf("%s (pid %d) still runs", c, pid)
		}
	}
	if n := framework.EtcdKeys(t, etcd, "/"+uid+"/"); n != 0 {
		t.Errorf("%d keys left under /%s/", n, uid)
	}
	if _, err := framework.Plane.Kube.CoreV1().Namespaces().Get(ctx, tc.Status.TenantNamespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("tenant namespace %s still there (err %v)", tc.Status.TenantNamespace, err)
	}
	// The cluster's addons were uninstalled and deleted before its control plane went.
	if _, err := framework.Plane.Butler.ButlerV1alpha1().TenantAddons(ns).Get(ctx, "demo-app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the TenantAddon outlived its cluster (err %v)", err)
	}
}

// TestLocalTenantClusterPerOS: a TenantCluster of one worker for each of three more OS formats
// (talos is TestLocalTenantCluster's) becomes Ready with a Node that joined using nothing but
// the data rendered for its OS; Flatcar's upgrade is TestLocalTenantClusterUpgrade's. Rocky is
// limited to Kubernetes v1.30.2 by the API, and a v1.30 build for it alone would cost every new
// machine a cold Kubernetes build: its data join in TestLocalMachineJoins and
// its v1beta3 JoinConfiguration is pkg/bootstrap's unit tests'.
func TestLocalTenantClusterPerOS(t *testing.T) {
	framework.LongestFirst(t, 80*time.Second)
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-local-os")
	oses := []bootstrap.OS{bootstrap.OSFlatcar, bootstrap.OSBottlerocket, bootstrap.OSKairos}
	for _, os := range oses {
		localCluster(t, ns, "os-"+string(os), framework.PinnedVersion, os, 1)
	}
	// The three at once: the group returns when each subtest has.
	t.Run("ready", func(t *testing.T) {
		for _, os := range oses {
			t.Run(string(os), func(t *testing.T) {
				t.Parallel()
				framework.WaitReady(t, ns, "os-"+string(os), 1, 5*time.Minute)
			})
		}
	})
	if t.Failed() {
		return
	}
	for _, os := range oses {
		name := "os-" + string(os)
		_, tenant := framework.MintKubeconfig(t, ns, name)
		nodes, err := readyNodes(ctx, tenant)
		if err != nil || len(nodes) != 1 {
			t.Errorf("%s: Ready nodes %d (%v)", os, len(nodes), err)
			continue
		}
		// The machine reads its data as an image of its OS, delivered in the contract's
		// data.format: every bootstrap Secret carries the one that OS's first-boot agent reads.
		secrets, err := framework.Plane.Kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name=" + name})
		if err != nil {
			t.Fatal(err)
		}
		formats := map[string]bool{}
		for _, s := range secrets.Items {
			f := s.Annotations[bootstrap.OSAnnotation]
			if f == "" {
				continue
			}
			formats[f] = true
			if got, want := string(s.Data[bootstrap.DataFormatKey]), string(os.DataFormat()); got != want {
				t.Errorf("%s: bootstrap Secret %s has data.format %q, want %q", os, s.Name, got, want)
			}
		}
		if !formats[string(os)] || len(formats) != 1 {
			t.Errorf("%s: bootstrap data formats %v", os, formats)
		}
	}
	for _, os := range oses {
		framework.MustKubectl(t, "delete", "tc", "os-"+string(os), "-n", ns, "--wait=false")
	}
	for _, os := range oses {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, "os-"+string(os), metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("%s: not gone after delete", os)
		}
	}
}

// restart SIGKILLs the plane's process name and starts it again with the same command line,
// environment and log, recording its pid where the plane stops it by.
func restart(t *testing.T, name string) {
	t.Helper()
	framework.KillPlaneProcess(t, name)()
}

// TestLocalTenantClusterSurvivesRestarts: butler-apiserver (whose controllers provision the
// cluster) and butler-localprovider (which runs its control plane and machines) are killed with
// SIGKILL while the workers join, and started again. The cluster still becomes Ready, its
// control plane processes are adopted rather than started twice, and it has one Cluster, one
// StewardControlPlane, one MachineDeployment and two Machines.
func TestLocalTenantClusterSurvivesRestarts(t *testing.T) {
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-restart")
	const name = "restarted"
	localCluster(t, ns, name, framework.PinnedVersion, bootstrap.OSTalos, 2)
	tc := framework.WaitCluster(t, ns, name, 3*time.Minute, "control plane ready", func(tc *v1alpha1.TenantCluster) bool {
		return meta.IsStatusConditionTrue(tc.Status.Conditions, "ControlPlaneReady")
	})
	tenantNS := tc.Status.TenantNamespace
	d := framework.DynamicClient(t)
	tcp, err := d.Resource(framework.TenantCPGVR).Namespace(tenantNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(tcp.GetUID())
	before := framework.TenantPids(t, filepath.Join(framework.Plane.Dir, "tenants", uid))

	restart(t, "butler-localprovider")
	restart(t, "butler-apiserver")
	framework.WaitReady(t, ns, name, 2, 4*time.Minute)

	if after := framework.TenantPids(t, filepath.Join(framework.Plane.Dir, "tenants", uid)); !maps.Equal(before, after) {
		t.Errorf("the tenant's processes were not adopted: before %v, after %v", before, after)
	}
	if got := framework.TenantProcesses(t, uid); !maps.Equal(got, framework.OneOfEachComponent) {
		t.Errorf("tenant processes %v, want one of each", got)
	}
	for r, n := range map[schema.GroupVersionResource]int{framework.ClustersGVR: 1, framework.StewardCPGVR: 1, framework.MachineDeploymentsGVR: 1, external.MachineGVR: 2} {
		list, err := d.Resource(r).Namespace(tenantNS).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != n {
			t.Errorf("%s in %s: %d, want %d (%v)", r.Resource, tenantNS, len(list.Items), n, err)
		}
	}

	framework.DeleteCluster(t, ns, name, uid)
}
