package plane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
	"github.com/butlerdotdev/butler-apiserver/test/localplane"
)

// TestLocalControlPlane drives butler-localprovider's control planes through the management
// cluster only: a Cluster, a StewardControlPlane (owned by the Cluster, as Cluster API makes
// it) and a LocalCluster, created by hand. The stand-in must make TenantControlPlane <name>
// Ready with real kube-apiserver, kube-controller-manager and kube-scheduler processes on the
// provider's datastore under /<tcp uid>, write the Secrets of the contract, a working admin
// kubeconfig and the kubeadm join setup in the tenant, report the StewardControlPlane Ready,
// patch the LocalCluster's endpoint, restart a killed kube-apiserver, and on deletion stop the
// processes and delete the etcd prefix and the state directory.
func TestLocalControlPlane(t *testing.T) {
	ctx := context.Background()
	dyn := framework.DynamicClient(t)
	ns := framework.Namespace(t, "lcp")
	const name, version = "lcp", "v1.36.3"
	localClusters := framework.GVR("infrastructure.butlerlabs.dev", "v1alpha1", "localclusters")

	framework.MustApply(t, fmt.Sprintf(`apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  clusterNetwork:
    services: {cidrBlocks: [10.112.0.0/16]}
    pods: {cidrBlocks: [10.244.0.0/16]}
  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: StewardControlPlane, name: %[1]s}
  infrastructureRef: {apiGroup: infrastructure.butlerlabs.dev, kind: LocalCluster, name: %[1]s}
---
apiVersion: infrastructure.butlerlabs.dev/v1alpha1
kind: LocalCluster
metadata: {name: %[1]s, namespace: %[2]s}
`, name, ns))
	cluster, err := dyn.Resource(framework.ClustersGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The ownerReference Cluster API's Cluster controller sets (it may set it too: the same one).
	created := time.Now()
	framework.MustApply(t, fmt.Sprintf(`apiVersion: controlplane.cluster.x-k8s.io/v1alpha1
kind: StewardControlPlane
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: {cluster.x-k8s.io/cluster-name: %[1]s}
  ownerReferences:
  - {apiVersion: cluster.x-k8s.io/v1beta2, kind: Cluster, name: %[1]s, uid: %[3]s}
spec:
  version: %[4]s
  replicas: 1 # the CRD defaults 2, which the local provider refuses: it runs one kube-apiserver
  network: {certSANs: [lcp.example.test]}
`, name, ns, cluster.GetUID(), version))
	t.Cleanup(func() {
		_, _ = framework.Kubectl(t, "delete", "-n", ns, "--wait=false", "clusters.cluster.x-k8s.io", name)
	})

	// TenantControlPlane Ready.
	tcp := lcpWait(t, 3*time.Minute, "the TenantControlPlane to be Ready", func() (*unstructured.Unstructured, bool) {
		tcp, err := dyn.Resource(framework.TenantCPGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, false
		}
		s, _, _ := unstructured.NestedString(tcp.Object, "status", "kubernetesResources", "version", "status")
		return tcp, s == "Ready"
	})
	readyAfter := time.Since(created)
	t.Logf("StewardControlPlane created -> TenantControlPlane Ready: %s", readyAfter.Round(10*time.Millisecond))
	uid := string(tcp.GetUID())
	endpoint, _, _ := unstructured.NestedString(tcp.Object, "status", "controlPlaneEndpoint")
	running, _, _ := unstructured.NestedString(tcp.Object, "status", "kubernetesResources", "version", "version")
	adminName, _, _ := unstructured.NestedString(tcp.Object, "status", "kubeconfig", "admin", "secretName")
	caName, _, _ := unstructured.NestedString(tcp.Object, "status", "certificates", "ca", "secretName")
	if !strings.HasPrefix(endpoint, "127.0.0.1:") || running != version || adminName != name+"-admin-kubeconfig" || caName != name+"-ca" {
		t.Fatalf("TenantControlPlane status: endpoint %q version %q admin %q ca %q", endpoint, running, adminName, caName)
	}
	if refs := tcp.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "StewardControlPlane" || refs[0].Name != name {
		t.Errorf("TenantControlPlane ownerReferences = %+v", refs)
	}
	port, _ := strconv.Atoi(strings.TrimPrefix(endpoint, "127.0.0.1:"))

	// The Secrets of the contract.
	secrets := framework.Plane.Kube.CoreV1().Secrets(ns)
	ca, err := secrets.Get(ctx, name+"-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ca.crt", "ca.key", "tls.crt", "tls.key"} {
		if len(ca.Data[k]) == 0 {
			t.Errorf("Secret %s-ca lacks %s", name, k)
		}
	}
	admin, err := secrets.Get(ctx, adminName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"admin.conf", "super-admin.conf", "admin.svc", "super-admin.svc"} {
		if len(admin.Data[k]) == 0 {
			t.Errorf("Secret %s lacks %s", adminName, k)
		}
	}
	var capiKubeconfig []byte
	lcpWait(t, 30*time.Second, "Secret "+name+"-kubeconfig", func() (*unstructured.Unstructured, bool) {
		s, err := secrets.Get(ctx, name+"-kubeconfig", metav1.GetOptions{})
		if err != nil {
			return nil, false
		}
		if s.Type != "cluster.x-k8s.io/secret" || s.Labels["cluster.x-k8s.io/cluster-name"] != name || len(s.Data) != 1 {
			t.Fatalf("Secret %s-kubeconfig: type %q labels %v keys %d", name, s.Type, s.Labels, len(s.Data))
		}
		capiKubeconfig = s.Data["value"]
		return nil, bytes.Equal(capiKubeconfig, admin.Data["admin.conf"])
	})

	// The admin kubeconfig works, through kubeadm's cluster-admins group.
	tenantCfg, err := clientcmd.RESTConfigFromKubeConfig(capiKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tenant := kubernetes.NewForConfigOrDie(tenantCfg)
	if _, err := tenant.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatalf("admin.conf against the tenant: %v", err)
	}
	kcFile := filepath.Join(t.TempDir(), "admin.conf")
	if err := os.WriteFile(kcFile, capiKubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := framework.KubectlAs(t, kcFile, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"); err != nil || !strings.Contains(out, "kubeadm:cluster-admins") || strings.Contains(out, "system:masters") {
		t.Errorf("kubectl auth whoami as admin.conf: %v %s", err, out)
	}
	if out, err := framework.KubectlAs(t, kcFile, "", "auth", "can-i", "create", "clusterroles.rbac.authorization.k8s.io"); err != nil || !strings.HasSuffix(strings.TrimSpace(out), "yes") {
		t.Errorf("admin.conf may not create clusterroles: %v %s", err, out)
	}
	// The tenant's own namespaces exist and the management cluster's objects do not leak in.
	if _, err := tenant.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the tenant sees the management namespace %s: %v", ns, err)
	}

	// kubeadm's join setup in the tenant.
	for _, crb := range []string{"kubeadm:kubelet-bootstrap", "kubeadm:node-autoapprove-bootstrap", "kubeadm:node-autoapprove-certificate-rotation", "kubeadm:cluster-admins", "kubeadm:get-nodes"} {
		if _, err := tenant.RbacV1().ClusterRoleBindings().Get(ctx, crb, metav1.GetOptions{}); err != nil {
			t.Errorf("ClusterRoleBinding %s: %v", crb, err)
		}
	}
	for _, cm := range []string{"kube-system/kubeadm-config", "kube-system/kubelet-config"} {
		parts := strings.Split(cm, "/")
		if _, err := tenant.CoreV1().ConfigMaps(parts[0]).Get(ctx, parts[1], metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap %s: %v", cm, err)
		}
	}
	// cluster-info, readable without credentials, names this endpoint and the tenant CA.
	anon := rest.AnonymousClientConfig(tenantCfg)
	anonClient := kubernetes.NewForConfigOrDie(anon)
	info, err := anonClient.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("anonymous get of kube-public/cluster-info: %v", err)
	}
	infoCfg, err := clientcmd.Load([]byte(info.Data["kubeconfig"]))
	if err != nil || infoCfg.Clusters[""] == nil || infoCfg.Clusters[""].Server != "https://"+endpoint ||
		!bytes.Equal(infoCfg.Clusters[""].CertificateAuthorityData, ca.Data["ca.crt"]) {
		t.Errorf("cluster-info kubeconfig: %v %+v", err, infoCfg)
	}

	// The StewardControlPlane and the LocalCluster.
	lcpWait(t, 30*time.Second, "the StewardControlPlane to be ready", func() (*unstructured.Unstructured, bool) {
		scp, err := dyn.Resource(framework.StewardCPGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, false
		}
		ready, _, _ := unstructured.NestedBool(scp.Object, "status", "ready")
		initialized, _, _ := unstructured.NestedBool(scp.Object, "status", "initialized")
		v, _, _ := unstructured.NestedString(scp.Object, "status", "version")
		external, _, _ := unstructured.NestedBool(scp.Object, "status", "externalManagedControlPlane")
		return scp, ready && initialized && v == version && external
	})
	lc, err := dyn.Resource(localClusters).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := unstructured.NestedString(lc.Object, "spec", "controlPlaneEndpoint", "host")
	lcPort, _, _ := unstructured.NestedInt64(lc.Object, "spec", "controlPlaneEndpoint", "port")
	if host != "127.0.0.1" || int(lcPort) != port {
		t.Errorf("LocalCluster spec.controlPlaneEndpoint = %s:%d, want %s", host, lcPort, endpoint)
	}

	// The processes, and the data under /<uid> in the tenants' datastore.
	stateDir := filepath.Join(framework.Plane.Dir, "tenants", uid)
	pids := framework.TenantPids(t, stateDir)
	var rss int64
	for component, pid := range pids {
		if syscall.Kill(pid, 0) != nil {
			t.Errorf("%s (pid %d) does not run", component, pid)
		}
		rss += lcpRSS(pid)
	}
	if len(pids) != 3 {
		t.Errorf("pid files: %v, want kube-apiserver, kube-controller-manager and kube-scheduler", pids)
	}
	t.Logf("tenant RSS (three processes): %d MiB", rss>>20)
	etcd := framework.TenantEtcd(t, pids["kube-apiserver"])
	if n := framework.EtcdKeys(t, etcd, "/"+uid+"/"); n == 0 {
		t.Errorf("no keys under /%s/ in the datastore", uid)
	}

	// A killed kube-apiserver is started again and the tenant answers again.
	if err := syscall.Kill(pids["kube-apiserver"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lcpWait(t, 2*time.Minute, "kube-apiserver to be started again", func() (*unstructured.Unstructured, bool) {
		p := framework.TenantPids(t, stateDir)["kube-apiserver"]
		return nil, p != 0 && p != pids["kube-apiserver"] && syscall.Kill(p, 0) == nil
	})
	lcpWait(t, 2*time.Minute, "the tenant to answer again", func() (*unstructured.Unstructured, bool) {
		_, err := tenant.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		return nil, err == nil
	})
	pids = framework.TenantPids(t, stateDir)

	// Deleting the Cluster: the garbage collector deletes the StewardControlPlane, then the
	// TenantControlPlane, whose finalizer holds it until its processes and data are gone.
	framework.MustKubectl(t, "delete", "-n", ns, "--wait=false", "clusters.cluster.x-k8s.io", name)
	lcpWait(t, 2*time.Minute, "the TenantControlPlane to be deleted", func() (*unstructured.Unstructured, bool) {
		_, err := dyn.Resource(framework.TenantCPGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		return nil, apierrors.IsNotFound(err)
	})
	for component, pid := range pids {
		if localplane.Alive(pid) {
			t.Errorf("%s (pid %d) runs after the TenantControlPlane was deleted", component, pid)
		}
	}
	if n := framework.EtcdKeys(t, etcd, "/"+uid+"/"); n != 0 {
		t.Errorf("%d keys left under /%s/ in the datastore", n, uid)
	}
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Errorf("the tenant's state directory is still there: %v", err)
	}
}

// lcpWait polls check every 100ms until it says done, and fails the test after timeout.
func lcpWait(t *testing.T, timeout time.Duration, what string, check func() (*unstructured.Unstructured, bool)) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		obj, ok := check()
		if obj != nil {
			last = obj
		}
		return ok, nil
	})
	if err != nil {
		status := ""
		if last != nil {
			b, _ := json.Marshal(last.Object["status"])
			status = fmt.Sprintf(" (status %s, annotations %v)", b, last.GetAnnotations())
		}
		t.Fatalf("timed out after %s waiting for %s%s", timeout, what, status)
	}
	return last
}

// lcpRSS is a process's resident memory in bytes.
func lcpRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
