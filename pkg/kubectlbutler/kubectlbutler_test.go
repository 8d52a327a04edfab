package kubectlbutler

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
)

func TestRenderTree(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	root := (&Node{Name: "TenantCluster/demo", Ready: "True", Reason: "Ready", Since: now.Add(-5 * time.Minute)}).Add(
		&Node{Name: "ControlPlane"},
		(&Node{Name: "Workers"}).Add((&Node{Name: "Machine/a", Ready: "False", Message: "waiting\nfor the node"}).Add(&Node{Name: "Node/a"})),
	)
	var out bytes.Buffer
	if err := Render(&out, root, now); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"NAME                READY  REASON  SINCE  MESSAGE",
		"TenantCluster/demo  True   Ready   5m",
		"├─ControlPlane",
		"└─Workers",
		"  └─Machine/a       False                 waiting for the node",
		"    └─Node/a",
	}
	got := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("got\n%s", out.String())
	}
	for i := range want {
		if strings.TrimRight(got[i], " ") != want[i] {
			t.Errorf("line %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func TestMergeKubeconfig(t *testing.T) {
	into := clientcmdapi.NewConfig()
	into.Clusters["mgmt"] = &clientcmdapi.Cluster{Server: "https://mgmt"}
	into.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "t"}
	into.Contexts["mgmt"] = &clientcmdapi.Context{Cluster: "mgmt", AuthInfo: "admin", Namespace: "team-a"}
	into.Contexts["demo"] = &clientcmdapi.Context{Cluster: "old", AuthInfo: "old"}
	into.CurrentContext = "mgmt"
	minted := clientcmdapi.NewConfig()
	minted.Clusters["tenant"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca")}
	minted.AuthInfos["butler:alice"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")}
	minted.Contexts["tenant"] = &clientcmdapi.Context{Cluster: "tenant", AuthInfo: "butler:alice"}
	minted.CurrentContext = "tenant"

	merged, err := Merge(into, minted, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if merged.CurrentContext != "mgmt" || merged.Contexts["mgmt"].Namespace != "team-a" || merged.Clusters["mgmt"].Server != "https://mgmt" {
		t.Errorf("the user's own entries changed: %+v", merged)
	}
	c := merged.Contexts["demo"]
	if c == nil || c.Cluster != "demo" || c.AuthInfo != "demo" {
		t.Fatalf("context demo: %+v", c)
	}
	if merged.Clusters["demo"].Server != "https://127.0.0.1:6443" || string(merged.AuthInfos["demo"].ClientKeyData) != "key" {
		t.Errorf("cluster or user demo: %+v %+v", merged.Clusters["demo"], merged.AuthInfos["demo"])
	}
	if _, ok := into.Contexts["demo"]; !ok || into.Contexts["demo"].Cluster != "old" {
		t.Errorf("Merge changed its input")
	}
	if _, err := Merge(into, clientcmdapi.NewConfig(), "demo"); err == nil {
		t.Errorf("a kubeconfig without a context merged")
	}
}

func TestExplainErrors(t *testing.T) {
	gr := schema.GroupResource{Group: "butler.butlerlabs.dev", Resource: "tenantclusters"}
	notFound := explain(apierrors.NewNotFound(gr, "nope"), "minting a kubeconfig (tenantclusters/kubeconfig)", "team-a", "nope")
	if !strings.Contains(notFound.Error(), `TenantCluster "nope" not found in namespace "team-a"`) {
		t.Errorf("not found: %v", notFound)
	}
	forbidden := explain(apierrors.NewForbidden(gr, "demo", errors.New(`User "bob" cannot create resource "tenantclusters/kubeconfig"`)), "minting a kubeconfig (tenantclusters/kubeconfig)", "team-a", "demo")
	if !strings.Contains(forbidden.Error(), "no right") || !strings.Contains(forbidden.Error(), "tenantclusters/kubeconfig") {
		t.Errorf("forbidden: %v", forbidden)
	}
}

func TestDescribeTree(t *testing.T) {
	now := metav1.Now()
	tc := &v1alpha1.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "team-a"},
		Status: v1alpha1.TenantClusterStatus{
			Phase:           v1alpha1.TenantClusterReady,
			TenantNamespace: "demo-12345678",
			Conditions: []metav1.Condition{
				{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: now},
				{Type: "AddonsReady", Status: metav1.ConditionFalse, Reason: "AddonFailed", Message: "broken failed", LastTransitionTime: now},
			},
			ObservedState: &v1alpha1.ObservedClusterState{Addons: []v1alpha1.ObservedAddon{{Name: "cni", Version: "1.0", Status: "Installed"}}},
		},
	}
	addon := &v1alpha1.TenantAddon{
		ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: "team-a"},
		Spec:       v1alpha1.TenantAddonSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "demo"}},
		Status:     v1alpha1.TenantAddonStatus{Phase: "Failed", Message: "chart not found"},
	}
	other := &v1alpha1.TenantAddon{
		ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "team-a"},
		Spec:       v1alpha1.TenantAddonSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "other"}},
	}
	cpGVR := schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: "v1alpha1", Resource: "stewardcontrolplanes"}
	cluster := obj(clustersGVR, "Cluster", "demo", map[string]any{
		"spec":   map[string]any{"controlPlaneRef": map[string]any{"apiGroup": cpGVR.Group, "kind": "StewardControlPlane", "name": "demo"}},
		"status": map[string]any{"conditions": []any{cond("Available", "True", "Available")}},
	})
	cp := obj(cpGVR, "StewardControlPlane", "demo", map[string]any{"status": map[string]any{"conditions": []any{cond("Ready", "True", "")}}})
	m1 := obj(machinesGVR, "Machine", "demo-workers-a", map[string]any{"status": map[string]any{
		"nodeRef": map[string]any{"name": "node-a"}, "conditions": []any{cond("Ready", "True", "Ready")}}})
	m2 := obj(machinesGVR, "Machine", "demo-workers-b", map[string]any{"status": map[string]any{"phase": "Provisioning"}})
	for _, m := range []*unstructured.Unstructured{m1, m2} {
		m.SetLabels(map[string]string{"cluster.x-k8s.io/cluster-name": "demo"})
	}
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		clustersGVR: "ClusterList", machinesGVR: "MachineList", cpGVR: "StewardControlPlaneList",
	}, cluster, cp, m1, m2)
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{cpGVR.GroupVersion()})
	mapper.Add(cpGVR.GroupVersion().WithKind("StewardControlPlane"), meta.RESTScopeNamespace)
	d := &describer{
		butler: fake.NewSimpleClientset(tc, addon, other), dyn: dyn, mapper: mapper, ns: "team-a",
		nodes: func(context.Context, *v1alpha1.TenantCluster) ([]corev1.Node, error) {
			return []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}}}}, nil
		},
	}
	root, err := d.tree(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Render(&out, root, time.Now()); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"TenantCluster/demo", "├─ControlPlane - StewardControlPlane/demo  True",
		"│ ├─Machine/demo-workers-a", "│ │ └─Node/node-a", "KubeletReady", "Machine/demo-workers-b", "Provisioning",
		"└─Addons", "AddonFailed", "TenantAddon/broken", "chart not found", "Addon/cni",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	if strings.Contains(text, "elsewhere") {
		t.Errorf("another cluster's addon in\n%s", text)
	}

	if _, err := d.tree(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), `TenantCluster "nope" not found in namespace "team-a"`) {
		t.Errorf("describe of a missing cluster: %v", err)
	}
}

func obj(gvr schema.GroupVersionResource, kind, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace("demo-12345678")
	return u
}

func cond(typ, status, reason string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "lastTransitionTime": "2026-01-01T00:00:00Z"}
}

// TestRestoreAsksForConfirmation: an in-place restore destroys what the cluster holds now, so the
// plugin refuses it, before asking the API anything, unless --confirm repeats the cluster's name.
func TestRestoreAsksForConfirmation(t *testing.T) {
	for _, args := range [][]string{
		{"restore", "demo", "--from", "snap"},
		{"restore", "demo", "--from", "snap", "--confirm", "other"},
	} {
		var out bytes.Buffer
		cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &out})
		cmd.SetArgs(append(args, "--kubeconfig", "/nonexistent"))
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "replaces every object") || !strings.Contains(err.Error(), "--confirm demo") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
