package plane

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// The upgrade tests go from the one extra version make test-e2e builds (E2E_KUBE_VERSIONS, also
// the real Steward's tenant version: Steward's kubeadm stops at 1.35) to the pinned one: one
// more Kubernetes build per machine instead of two, and a minor upgrade, the kind users make.
const (
	upgradeFrom = "v1.35.4"
	upgradeTo   = framework.PinnedVersion
	upgradeOS   = bootstrap.OSFlatcar
)

// TestLocalTenantClusterUpgrade proves a minor upgrade of a kubeadm (Flatcar) cluster end to end
// on the local provider: a TenantCluster of two Flatcar workers at v1.35.4 (built from the module
// proxy on first use, the TenantControlPlane saying so meanwhile) becomes Ready; its Nodes joined
// with Ignition data carrying a kubeadm JoinConfiguration and report kubelet v1.35.4; the tenant
// serves v1.35.4. kubectl patch to the pinned version moves the control plane first (the
// MachineDeployment's version is never seen moved before the tenant serves it), then new
// Machines at that version replace the old ones, the phase goes Updating -> Ready at the new
// generation, and deletion leaves no process and no TenantCluster.
func TestLocalTenantClusterUpgrade(t *testing.T) {
	framework.LongestFirst(t, 100*time.Second)
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-upgrade")
	const name = "upgrade"
	d := framework.DynamicClient(t)
	cold := map[string]bool{}
	for _, v := range []string{upgradeFrom, upgradeTo} {
		cold[v] = v != framework.PinnedVersion && !builtVersion(v)
	}
	t.Logf("versions to build first: %v", cold)

	created := time.Now()
	localCluster(t, ns, name, upgradeFrom, upgradeOS, 2)

	tc := framework.WaitCluster(t, ns, name, 3*time.Minute, "a tenant namespace", func(tc *v1alpha1.TenantCluster) bool {
		return tc.Status.TenantNamespace != ""
	})
	tenantNS := tc.Status.TenantNamespace
	if cold[upgradeFrom] {
		// Not built yet: the TenantControlPlane says it is being built.
		waitTCPReason(t, d, tenantNS, name, "BuildingKubernetes", 3*time.Minute)
	}
	tc = framework.WaitReady(t, ns, name, 2, 20*time.Minute)
	t.Logf("create -> Ready at %s with 2 %s workers: %s (build of %s cold: %v)", upgradeFrom, upgradeOS,
		time.Since(created).Round(100*time.Millisecond), upgradeFrom, cold[upgradeFrom])
	if got := tc.Status.ObservedState.KubernetesVersion; got != upgradeFrom {
		t.Errorf("observedState.kubernetesVersion %q, want %s", got, upgradeFrom)
	}

	_, tenant := framework.MintKubeconfig(t, ns, name)
	if v := serverVersion(tenant); v != upgradeFrom {
		t.Fatalf("the tenant's /version says %q, want %s", v, upgradeFrom)
	}
	checkJoinedNodes(t, ctx, tenant, name, upgradeFrom, 2)
	oldMachines := machinesAt(t, d, tenantNS, name)
	if len(oldMachines) != 2 {
		t.Fatalf("Machines before the upgrade: %v", oldMachines)
	}
	for m, v := range oldMachines {
		if v != upgradeFrom {
			t.Errorf("Machine %s at %s, want %s", m, v, upgradeFrom)
		}
	}
	tcp, err := d.Resource(framework.TenantCPGVR).Namespace(tenantNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(tcp.GetUID())

	// The upgrade, watched every 100 ms: in each round the MachineDeployment is read before the
	// tenant's /version, so a MachineDeployment at the new version while the tenant still
	// answers the old one is an upgrade that moved the workers first.
	patched := time.Now()
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type", "merge", "-p", fmt.Sprintf(`{"spec":{"kubernetesVersion":%q}}`, upgradeTo))
	var cpAt, mdAt, machineAt, readyAt time.Duration
	var phases []v1alpha1.TenantClusterPhase
	var building bool
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Minute, true, func(ctx context.Context) (bool, error) {
		now := time.Since(patched)
		md, err := d.Resource(framework.MachineDeploymentsGVR).Namespace(tenantNS).Get(ctx, name+"-workers", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		mdVersion, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "version")
		served := serverVersion(tenant)
		if cpAt == 0 && served == upgradeTo {
			cpAt = now
			t.Logf("t=%s the tenant serves %s", now.Round(100*time.Millisecond), upgradeTo)
		}
		if mdVersion == upgradeTo && mdAt == 0 {
			mdAt = now
			t.Logf("t=%s MachineDeployment at %s", now.Round(100*time.Millisecond), upgradeTo)
			if cpAt == 0 {
				return false, fmt.Errorf("the MachineDeployment moved to %s while the tenant served %q", upgradeTo, served)
			}
		}
		if machineAt == 0 {
			for m, v := range machinesAt(t, d, tenantNS, name) {
				if v == upgradeTo {
					machineAt = now
					t.Logf("t=%s first Machine at %s: %s", now.Round(100*time.Millisecond), upgradeTo, m)
					if cpAt == 0 {
						return false, fmt.Errorf("Machine %s at %s before the tenant served it", m, upgradeTo)
					}
				}
			}
		}
		if cold[upgradeTo] && !building {
			if a := tcpAnnotation(d, tenantNS, name); a == "BuildingKubernetes" {
				building = true
				t.Logf("t=%s the TenantControlPlane says it is building %s", now.Round(100*time.Millisecond), upgradeTo)
			}
		}
		tc, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if len(phases) == 0 || phases[len(phases)-1] != tc.Status.Phase {
			phases = append(phases, tc.Status.Phase)
			t.Logf("t=%s phase %s (%s)", now.Round(100*time.Millisecond), tc.Status.Phase, framework.StatusOf(tc))
		}
		done := tc.Status.Phase == v1alpha1.TenantClusterReady && tc.Status.ObservedGeneration == tc.Generation &&
			meta.IsStatusConditionTrue(tc.Status.Conditions, "Ready") && tc.Status.ObservedState != nil &&
			tc.Status.ObservedState.KubernetesVersion == upgradeTo && tc.Status.ObservedState.Workers.Ready == 2 && mdAt != 0
		if done {
			readyAt = now
		}
		return done, nil
	})
	if err != nil {
		tc, _ := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		t.Fatalf("upgrade to %s: %v; phases %v; %s", upgradeTo, err, phases, framework.StatusOf(tc))
	}
	t.Logf("upgrade %s -> %s: control plane serving at t=%s, MachineDeployment moved at t=%s, first new Machine at t=%s, Ready at t=%s (build of %s cold: %v)",
		upgradeFrom, upgradeTo, cpAt.Round(100*time.Millisecond), mdAt.Round(100*time.Millisecond),
		machineAt.Round(100*time.Millisecond), readyAt.Round(100*time.Millisecond), upgradeTo, cold[upgradeTo])
	if cold[upgradeTo] && !building {
		t.Errorf("%s was not built before, but the TenantControlPlane never said it was building it", upgradeTo)
	}
	if cpAt > mdAt || machineAt == 0 || cpAt > machineAt {
		t.Errorf("order: control plane at t=%s, MachineDeployment at t=%s, first new Machine at t=%s", cpAt, mdAt, machineAt)
	}
	// Ready -> Updating -> Ready, and nothing else (no Provisioning or Failed in between).
	if i := slices.Index(phases, v1alpha1.TenantClusterUpdating); i < 0 {
		t.Errorf("phases during the upgrade %v: never Updating", phases)
	}
	for _, p := range phases {
		if p != v1alpha1.TenantClusterReady && p != v1alpha1.TenantClusterUpdating {
			t.Errorf("phases during the upgrade %v: %s", phases, p)
		}
	}

	// The workers rolled: two Machines at the new version, none of the old ones, their Nodes
	// Ready with the new kubelet, joined with Flatcar data.
	newMachines := machinesAt(t, d, tenantNS, name)
	if len(newMachines) != 2 {
		t.Errorf("Machines after the upgrade: %v", newMachines)
	}
	for m, v := range newMachines {
		if _, old := oldMachines[m]; old || v != upgradeTo {
			t.Errorf("Machine %s at %s after the upgrade (old ones: %v)", m, v, oldMachines)
		}
	}
	if v := serverVersion(tenant); v != upgradeTo {
		t.Errorf("the tenant's /version says %q, want %s", v, upgradeTo)
	}
	checkJoinedNodes(t, ctx, tenant, name, upgradeTo, 2)
	// The old version's processes were replaced, not left running beside the new ones.
	if got := framework.TenantProcesses(t, uid); !maps.Equal(got, framework.OneOfEachComponent) {
		t.Errorf("tenant processes after the upgrade %v, want one of each", got)
	}

	framework.DeleteCluster(t, ns, name, uid)
	if list, err := d.Resource(external.MachineGVR).Namespace(tenantNS).List(ctx, metav1.ListOptions{}); err == nil && len(list.Items) != 0 {
		t.Errorf("%d Machines left in %s", len(list.Items), tenantNS)
	}
}

// builtVersion says whether the local provider has the binaries of version already (the e2e
// plane uses its default KUBE_VERSIONS_DIR unless it is set).
func builtVersion(version string) bool {
	dir := os.Getenv("KUBE_VERSIONS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "_output", "kube-versions")
	}
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(dir, version, "bin", c)); err != nil {
			return false
		}
	}
	return true
}

// serverVersion is the tenant's /version, or "" when it does not answer.
func serverVersion(tenant kubernetes.Interface) string {
	v, err := tenant.Discovery().ServerVersion()
	if err != nil {
		return ""
	}
	return v.GitVersion
}

// tcpAnnotation is the reason the local provider gives on the TenantControlPlane.
func tcpAnnotation(d dynamic.Interface, ns, name string) string {
	tcp, err := d.Resource(framework.TenantCPGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return tcp.GetAnnotations()[external.LocalProviderReasonAnnotation]
}

// waitTCPReason waits for the TenantControlPlane's reason annotation.
func waitTCPReason(t *testing.T, d dynamic.Interface, ns, name, reason string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return tcpAnnotation(d, ns, name) == reason, nil
	})
	if err != nil {
		t.Fatalf("TenantControlPlane %s/%s never said %s (last: %q)", ns, name, reason, tcpAnnotation(d, ns, name))
	}
}

// machinesAt is the cluster's Machines by name, with their spec.version.
func machinesAt(t *testing.T, d dynamic.Interface, ns, cluster string) map[string]string {
	t.Helper()
	list, err := d.Resource(external.MachineGVR).Namespace(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name=" + cluster})
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, m := range list.Items {
		v, _, _ := unstructured.NestedString(m.Object, "spec", "version")
		out[m.GetName()] = v
	}
	return out
}

// checkJoinedNodes checks that the tenant has n Ready Nodes, each with a local providerID and
// the kubelet version, and that the cluster's bootstrap data are upgradeOS's format carrying a
// JoinConfiguration in the kubeadm API that version reads (v1beta4 since 1.31).
func checkJoinedNodes(t *testing.T, ctx context.Context, tenant kubernetes.Interface, cluster, version string, n int) {
	t.Helper()
	var nodes []corev1.Node
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		nodes, err = readyNodes(ctx, tenant)
		if err != nil {
			return false, nil
		}
		all, err := tenant.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return err == nil && len(nodes) == n && len(all.Items) == n, nil
	})
	if err != nil {
		t.Fatalf("Ready Nodes in the tenant: %d, want %d", len(nodes), n)
	}
	for _, node := range nodes {
		if !strings.HasPrefix(node.Spec.ProviderID, "local://") {
			t.Errorf("Node %s: providerID %q", node.Name, node.Spec.ProviderID)
		}
		if got := node.Status.NodeInfo.KubeletVersion; got != version {
			t.Errorf("Node %s: kubelet %q, want %s", node.Name, got, version)
		}
	}
	secrets, err := framework.Plane.Kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name=" + cluster})
	if err != nil {
		t.Fatal(err)
	}
	data := 0
	for _, s := range secrets.Items {
		format, ok := s.Annotations[bootstrap.OSAnnotation]
		if !ok {
			continue
		}
		data++
		if format != string(upgradeOS) {
			t.Errorf("bootstrap data %s: format %q, want %s", s.Name, format, upgradeOS)
			continue
		}
		info, err := bootstrap.Parse(upgradeOS, s.Data["value"])
		if err != nil {
			t.Errorf("bootstrap data %s: %v", s.Name, err)
			continue
		}
		if info.KubeadmAPIVersion != "kubeadm.k8s.io/v1beta4" {
			t.Errorf("bootstrap data %s: JoinConfiguration %q, want kubeadm.k8s.io/v1beta4 (kubeadm %s)", s.Name, info.KubeadmAPIVersion, version)
		}
	}
	if data < n {
		t.Errorf("%d bootstrap data Secrets of cluster %s, want at least %d", data, cluster, n)
	}
}
