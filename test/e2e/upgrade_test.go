package e2e

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
	"sigs.k8s.io/yaml"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

const (
	rockyFrom = "v1.30.1"
	rockyTo   = "v1.30.2"
)

// TestLocalTenantClusterRockyUpgrade proves a patch upgrade of a kubeadm (Rocky) cluster end to
// end on the local provider, at versions other than the pinned one: a TenantCluster of two Rocky
// workers at v1.30.1 (built from the module proxy on first use, the TenantControlPlane saying so
// meanwhile) becomes Ready; its Nodes joined with cloud-init data carrying a
// kubeadm.k8s.io/v1beta3 JoinConfiguration (what kubeadm 1.30 reads) and report kubelet v1.30.1;
// the tenant serves v1.30.1. kubectl patch to v1.30.2 moves the control plane first (the
// MachineDeployment's version is never seen moved before the tenant serves v1.30.2), then new
// Machines at v1.30.2 replace the old ones, the phase goes Updating -> Ready at the new
// generation, and deletion leaves no process and no TenantCluster.
func TestLocalTenantClusterRockyUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "e2e-rocky")
	const name = "rocky"
	d := dynamicClient(t)
	cold := map[string]bool{}
	for _, v := range []string{rockyFrom, rockyTo} {
		cold[v] = !builtVersion(v)
	}
	t.Logf("versions to build first: %v", cold)

	created := time.Now()
	localCluster(t, ns, name, rockyFrom, bootstrap.OSRocky, 2)

	tc := waitCluster(t, ns, name, 3*time.Minute, "a tenant namespace", func(tc *v1alpha1.TenantCluster) bool {
		return tc.Status.TenantNamespace != ""
	})
	tenantNS := tc.Status.TenantNamespace
	if cold[rockyFrom] {
		// Not built yet: the TenantControlPlane says it is being built.
		waitTCPReason(t, d, tenantNS, name, "BuildingKubernetes", 3*time.Minute)
	}
	tc = waitReady(t, ns, name, 2, 20*time.Minute)
	t.Logf("create -> Ready at %s with 2 Rocky workers: %s (build of %s cold: %v)", rockyFrom,
		time.Since(created).Round(100*time.Millisecond), rockyFrom, cold[rockyFrom])
	if got := tc.Status.ObservedState.KubernetesVersion; got != rockyFrom {
		t.Errorf("observedState.kubernetesVersion %q, want %s", got, rockyFrom)
	}

	_, tenant := mintKubeconfig(t, ns, name)
	if v := serverVersion(tenant); v != rockyFrom {
		t.Fatalf("the tenant's /version says %q, want %s", v, rockyFrom)
	}
	checkRockyNodes(t, ctx, tenant, name, rockyFrom, 2)
	oldMachines := machinesAt(t, d, tenantNS, name)
	if len(oldMachines) != 2 {
		t.Fatalf("Machines before the upgrade: %v", oldMachines)
	}
	for m, v := range oldMachines {
		if v != rockyFrom {
			t.Errorf("Machine %s at %s, want %s", m, v, rockyFrom)
		}
	}
	tcp, err := d.Resource(tenantCPGVR).Namespace(tenantNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(tcp.GetUID())

	// The upgrade, watched every 100 ms: in each round the MachineDeployment is read before the
	// tenant's /version, so a MachineDeployment at the new version while the tenant still
	// answers the old one is an upgrade that moved the workers first.
	patched := time.Now()
	mustKubectl(t, "patch", "tc", name, "-n", ns, "--type", "merge", "-p", fmt.Sprintf(`{"spec":{"kubernetesVersion":%q}}`, rockyTo))
	var cpAt, mdAt, machineAt, readyAt time.Duration
	var phases []v1alpha1.TenantClusterPhase
	var building bool
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Minute, true, func(ctx context.Context) (bool, error) {
		now := time.Since(patched)
		md, err := d.Resource(machineDeploymentsGVR).Namespace(tenantNS).Get(ctx, name+"-workers", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		mdVersion, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "version")
		served := serverVersion(tenant)
		if cpAt == 0 && served == rockyTo {
			cpAt = now
			t.Logf("t=%s the tenant serves %s", now.Round(100*time.Millisecond), rockyTo)
		}
		if mdVersion == rockyTo && mdAt == 0 {
			mdAt = now
			t.Logf("t=%s MachineDeployment at %s", now.Round(100*time.Millisecond), rockyTo)
			if cpAt == 0 {
				return false, fmt.Errorf("the MachineDeployment moved to %s while the tenant served %q", rockyTo, served)
			}
		}
		if machineAt == 0 {
			for m, v := range machinesAt(t, d, tenantNS, name) {
				if v == rockyTo {
					machineAt = now
					t.Logf("t=%s first Machine at %s: %s", now.Round(100*time.Millisecond), rockyTo, m)
					if cpAt == 0 {
						return false, fmt.Errorf("Machine %s at %s before the tenant served it", m, rockyTo)
					}
				}
			}
		}
		if cold[rockyTo] && !building {
			if a := tcpAnnotation(d, tenantNS, name); a == "BuildingKubernetes" {
				building = true
				t.Logf("t=%s the TenantControlPlane says it is building %s", now.Round(100*time.Millisecond), rockyTo)
			}
		}
		tc, err := plane.butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if len(phases) == 0 || phases[len(phases)-1] != tc.Status.Phase {
			phases = append(phases, tc.Status.Phase)
			t.Logf("t=%s phase %s (%s)", now.Round(100*time.Millisecond), tc.Status.Phase, statusOf(tc))
		}
		done := tc.Status.Phase == v1alpha1.TenantClusterReady && tc.Status.ObservedGeneration == tc.Generation &&
			meta.IsStatusConditionTrue(tc.Status.Conditions, "Ready") && tc.Status.ObservedState != nil &&
			tc.Status.ObservedState.KubernetesVersion == rockyTo && tc.Status.ObservedState.Workers.Ready == 2 && mdAt != 0
		if done {
			readyAt = now
		}
		return done, nil
	})
	if err != nil {
		tc, _ := plane.butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		t.Fatalf("upgrade to %s: %v; phases %v; %s", rockyTo, err, phases, statusOf(tc))
	}
	t.Logf("upgrade %s -> %s: control plane serving at t=%s, MachineDeployment moved at t=%s, first new Machine at t=%s, Ready at t=%s (build of %s cold: %v)",
		rockyFrom, rockyTo, cpAt.Round(100*time.Millisecond), mdAt.Round(100*time.Millisecond),
		machineAt.Round(100*time.Millisecond), readyAt.Round(100*time.Millisecond), rockyTo, cold[rockyTo])
	if cold[rockyTo] && !building {
		t.Errorf("%s was not built before, but the TenantControlPlane never said it was building it", rockyTo)
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
	// Ready with the new kubelet, joined with Rocky data.
	newMachines := machinesAt(t, d, tenantNS, name)
	if len(newMachines) != 2 {
		t.Errorf("Machines after the upgrade: %v", newMachines)
	}
	for m, v := range newMachines {
		if _, old := oldMachines[m]; old || v != rockyTo {
			t.Errorf("Machine %s at %s after the upgrade (old ones: %v)", m, v, oldMachines)
		}
	}
	if v := serverVersion(tenant); v != rockyTo {
		t.Errorf("the tenant's /version says %q, want %s", v, rockyTo)
	}
	checkRockyNodes(t, ctx, tenant, name, rockyTo, 2)
	// The old version's processes were replaced, not left running beside the new ones.
	if got := tenantProcesses(t, uid); !maps.Equal(got, oneOfEachComponent) {
		t.Errorf("tenant processes after the upgrade %v, want one of each", got)
	}

	deleteCluster(t, ns, name, uid)
	if list, err := d.Resource(external.MachineGVR).Namespace(tenantNS).List(ctx, metav1.ListOptions{}); err == nil && len(list.Items) != 0 {
		t.Errorf("%d Machines left in %s", len(list.Items), tenantNS)
	}
}

// builtVersion says whether the local provider has the binaries of version already (the e2e
// plane uses hack/local-up.sh's default KUBE_VERSIONS_DIR unless it is set).
func builtVersion(version string) bool {
	dir := os.Getenv("KUBE_VERSIONS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "_output", "kube-versions")
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
	tcp, err := d.Resource(tenantCPGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
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

// checkRockyNodes checks that the tenant has n Ready Nodes, each with a local providerID and
// the kubelet version, and that the cluster's bootstrap data are Rocky cloud-init: a
// #cloud-config whose JoinConfiguration is the kubeadm API of that version (v1beta3 for 1.30).
func checkRockyNodes(t *testing.T, ctx context.Context, tenant kubernetes.Interface, cluster, version string, n int) {
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
	secrets, err := plane.kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name=" + cluster})
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
		if format != string(bootstrap.OSRocky) {
			t.Errorf("bootstrap data %s: format %q, want rocky", s.Name, format)
			continue
		}
		if _, err := bootstrap.Parse(bootstrap.OSRocky, s.Data["value"]); err != nil {
			t.Errorf("bootstrap data %s: %v", s.Name, err)
		}
		if api := joinConfigAPI(s.Data["value"]); api != "kubeadm.k8s.io/v1beta3" {
			t.Errorf("bootstrap data %s: JoinConfiguration %q, want kubeadm.k8s.io/v1beta3 (kubeadm %s)", s.Name, api, version)
		}
	}
	if data < n {
		t.Errorf("%d bootstrap data Secrets of cluster %s, want at least %d", data, cluster, n)
	}
}

// joinConfigAPI is the apiVersion of the JoinConfiguration a Rocky #cloud-config writes.
func joinConfigAPI(cloudConfig []byte) string {
	var cc struct {
		WriteFiles []struct{ Path, Content string } `json:"write_files"`
	}
	if err := yaml.Unmarshal(cloudConfig, &cc); err != nil {
		return ""
	}
	for _, f := range cc.WriteFiles {
		var doc struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal([]byte(f.Content), &doc); err == nil && doc.Kind == "JoinConfiguration" {
			return doc.APIVersion
		}
	}
	return ""
}
