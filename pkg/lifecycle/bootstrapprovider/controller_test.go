package bootstrapprovider

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapdata "github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

const (
	ns        = "prod-1a2b3c4d"
	cluster   = "prod"
	machineN  = "prod-workers-abc12-xyz89"
	configN   = "prod-workers-abc12-xyz89"
	configUID = "11111111-2222-3333-4444-555555555555"
)

var localMachineGVR = schema.GroupVersionResource{Group: external.LocalInfrastructureGroup, Version: "v1alpha1", Resource: "localmachines"}

func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func u(obj map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: obj} }

func configObj(os string) *unstructured.Unstructured {
	return u(map[string]any{
		"apiVersion": "bootstrap.butlerlabs.dev/v1alpha1", "kind": "BootstrapConfig",
		"metadata": map[string]any{
			"name": configN, "namespace": ns, "uid": configUID, "generation": int64(1),
			"labels": map[string]any{clusterv1.ClusterNameLabel: cluster, external.TenantClusterLabel: cluster},
			"ownerReferences": []any{map[string]any{
				"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": machineN, "uid": "m-uid", "controller": true}},
		},
		"spec": map[string]any{
			"os":            map[string]any{"type": os},
			"nodeLabels":    map[string]any{external.TenantClusterLabel: cluster},
			"nodeTaints":    []any{map[string]any{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}},
			"clusterDNS":    "10.96.0.10",
			"clusterDomain": "cluster.local",
			"podCIDR":       "10.244.0.0/16",
			"serviceCIDR":   "10.96.0.0/12",
			"tokenTTL":      "15m",
		},
	})
}

func machineObj() *unstructured.Unstructured {
	return u(map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
		"metadata": map[string]any{"name": machineN, "namespace": ns, "uid": "m-uid",
			"labels": map[string]any{clusterv1.ClusterNameLabel: cluster}},
		"spec": map[string]any{
			"clusterName": cluster, "version": "v1.36.3",
			"bootstrap":         map[string]any{"configRef": map[string]any{"apiGroup": external.BootstrapGroup, "kind": "BootstrapConfig", "name": configN}},
			"infrastructureRef": map[string]any{"apiGroup": external.LocalInfrastructureGroup, "kind": "LocalMachine", "name": machineN},
		},
	})
}

func clusterObj(initialized bool) *unstructured.Unstructured {
	return u(map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": cluster, "namespace": ns},
		"spec":     map[string]any{"controlPlaneEndpoint": map[string]any{"host": "127.0.0.1", "port": int64(46443)}},
		"status":   map[string]any{"initialization": map[string]any{"controlPlaneInitialized": initialized}},
	})
}

func localMachineObj() *unstructured.Unstructured {
	return u(map[string]any{
		"apiVersion": "infrastructure.butlerlabs.dev/v1alpha1", "kind": "LocalMachine",
		"metadata": map[string]any{"name": machineN, "namespace": ns},
		"spec":     map[string]any{"providerID": "local://" + ns + "/" + machineN},
	})
}

func caSecret(ca []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-ca", Namespace: ns},
		Data: map[string][]byte{"tls.crt": ca, "tls.key": []byte("k")}}
}

func kubeconfigSecret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-kubeconfig", Namespace: ns, ResourceVersion: "1",
		Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}}, Type: DataSecretType,
		Data: map[string][]byte{"value": []byte("apiVersion: v1\nkind: Config\n")}}
}

type env struct {
	t      *testing.T
	ctx    context.Context
	kube   *kubefake.Clientset
	dyn    *dynamicfake.FakeDynamicClient
	tenant *kubefake.Clientset
	c      *Controller
	ca     []byte
	now    time.Time
}

func newEnv(t *testing.T, dynObjs []runtime.Object, kubeObjs ...runtime.Object) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	listKinds := map[schema.GroupVersionResource]string{
		configGVR: "BootstrapConfigList", machineGVR: "MachineList", clusterGVR: "ClusterList", localMachineGVR: "LocalMachineList",
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, dynObjs...)
	// The tenant namespace, labelled as the TenantCluster controller makes it: its Secrets are watched.
	tenantNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{external.TenantClusterLabel: "prod"}}}
	kube := kubefake.NewClientset(append(kubeObjs, tenantNS)...)
	kube.Resources = []*metav1.APIResourceList{
		{GroupVersion: configGVR.GroupVersion().String()}, {GroupVersion: machineGVR.GroupVersion().String()}}
	d := &controllerkit.Deps{Kube: kube, Dynamic: dyn, DynamicInformers: dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)}
	c, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	if c.idle != nil {
		t.Fatal(c.idle)
	}
	e := &env{t: t, ctx: ctx, kube: kube, dyn: dyn, tenant: kubefake.NewClientset(), c: c, now: time.Now()}
	c.tenantClient = func([]byte) (kubernetes.Interface, error) { return e.tenant, nil }
	c.clock = controllerkit.ClockFunc(func() time.Time { return e.now })
	d.DynamicInformers.Start(ctx.Done())
	d.KubeInformersFor(external.TenantClusterLabel).Start(ctx.Done())
	d.TenantSecrets().Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("caches did not sync")
	}
	return e
}

// reconcile runs one reconcile and waits until the caches show what it wrote.
func (e *env) reconcile() error {
	e.t.Helper()
	err := e.c.Reconcile(e.ctx, ns+"/"+configN)
	e.settle()
	return err
}

func (e *env) settle() {
	e.t.Helper()
	if err := wait.PollUntilContextTimeout(e.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		live, err := e.dyn.Resource(configGVR).Namespace(ns).Get(e.ctx, configN, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		cached, err2 := e.c.configs.ByNamespace(ns).Get(configN)
		if err != nil || err2 != nil {
			return false, nil
		}
		if !reflect.DeepEqual(live.Object, cached.(*unstructured.Unstructured).Object) {
			return false, nil
		}
		s, err := e.kube.CoreV1().Secrets(ns).Get(e.ctx, configN, metav1.GetOptions{})
		cs, err2 := e.c.secrets.Secrets(ns).Get(configN)
		if apierrors.IsNotFound(err) {
			return apierrors.IsNotFound(err2), nil
		}
		return err2 == nil && reflect.DeepEqual(s.Data, cs.Data), nil
	}); err != nil {
		e.t.Fatal("caches did not catch up")
	}
}

func (e *env) config() *external.BootstrapConfig {
	e.t.Helper()
	obj, err := e.dyn.Resource(configGVR).Namespace(ns).Get(e.ctx, configN, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	bc, err := external.FromObject[external.BootstrapConfig](obj)
	if err != nil {
		e.t.Fatal(err)
	}
	return bc
}

func (e *env) condition(t string) *metav1.Condition {
	return meta.FindStatusCondition(e.config().Status.Conditions, t)
}

func (e *env) wantCondition(status metav1.ConditionStatus, reason, phase string) {
	e.t.Helper()
	for _, typ := range []string{ConditionDataSecretAvailable, ConditionReady} {
		c := e.condition(typ)
		if c == nil || c.Status != status || c.Reason != reason || c.Message == "" {
			e.t.Fatalf("condition %s = %+v, want %s/%s with a message", typ, c, status, reason)
		}
	}
	if got := e.config().Status.Phase; got != phase {
		e.t.Fatalf("phase = %q, want %q", got, phase)
	}
}

func (e *env) tenantTokens() []corev1.Secret {
	e.t.Helper()
	l, err := e.tenant.CoreV1().Secrets("kube-system").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

func (e *env) dataSecret() (*corev1.Secret, error) {
	return e.kube.CoreV1().Secrets(ns).Get(e.ctx, configN, metav1.GetOptions{})
}

func readyEnv(t *testing.T, os string) *env {
	ca := testCA(t)
	e := newEnv(t, []runtime.Object{configObj(os), machineObj(), clusterObj(true), localMachineObj()}, caSecret(ca), kubeconfigSecret())
	e.ca = ca
	return e
}

// isRequeue: a written config comes back after a third of its 15m token TTL.
func isRequeue(err error) bool {
	return err != nil && err.Error() == controllerkit.RequeueAfter(5*time.Minute).Error()
}

// TestDataSecretPerOS: for each OS the controller mints a token in the tenant, writes the data
// Secret by CAPI's contract, and that data parses back to this cluster, token and machine.
func TestDataSecretPerOS(t *testing.T) {
	for _, os := range bootstrapdata.OSes {
		t.Run(string(os), func(t *testing.T) {
			e := readyEnv(t, string(os))
			if err := e.reconcile(); !isRequeue(err) {
				t.Fatalf("Reconcile = %v, want a requeue for the token refresh", err)
			}
			e.wantCondition(metav1.ConditionTrue, ReasonDataSecretCreated, PhaseReady)
			bc := e.config()
			if bc.Status.DataSecretName == nil || *bc.Status.DataSecretName != configN {
				t.Errorf("status.dataSecretName = %v, want %s", bc.Status.DataSecretName, configN)
			}
			if bc.Status.Initialization == nil || bc.Status.Initialization.DataSecretCreated == nil || !*bc.Status.Initialization.DataSecretCreated {
				t.Errorf("status.initialization = %+v, want dataSecretCreated", bc.Status.Initialization)
			}
			if len(bc.Finalizers) != 1 || bc.Finalizers[0] != Finalizer {
				t.Errorf("finalizers = %v", bc.Finalizers)
			}

			s, err := e.dataSecret()
			if err != nil {
				t.Fatal(err)
			}
			if s.Type != DataSecretType || len(s.Data) != 2 || len(s.Data["value"]) == 0 {
				t.Errorf("data Secret type %s keys %d", s.Type, len(s.Data))
			}
			// Cluster API's contract: the providers deliver by data.format, cloud-config when unset.
			wantFormat := map[bootstrapdata.OS]string{bootstrapdata.OSFlatcar: "ignition"}[os]
			if wantFormat == "" {
				wantFormat = "cloud-config"
			}
			if got := string(s.Data["format"]); got != wantFormat {
				t.Errorf("data Secret format = %q, want %q", got, wantFormat)
			}
			if s.Labels[clusterv1.ClusterNameLabel] != cluster || s.Labels[external.TenantClusterLabel] != cluster {
				t.Errorf("data Secret labels = %v", s.Labels)
			}
			if s.Annotations[bootstrapdata.OSAnnotation] != string(os) {
				t.Errorf("OS annotation = %q", s.Annotations[bootstrapdata.OSAnnotation])
			}
			if ref := metav1.GetControllerOf(s); ref == nil || ref.Kind != "BootstrapConfig" || ref.Name != configN || string(ref.UID) != configUID {
				t.Errorf("controller ref = %+v", ref)
			}

			info, err := bootstrapdata.Parse(os, s.Data["value"])
			if err != nil {
				t.Fatalf("the data does not parse: %v", err)
			}
			if info.Endpoint != "127.0.0.1:46443" || info.NodeName != machineN || info.ProviderID != "local://"+ns+"/"+machineN {
				t.Errorf("join info = %+v", info)
			}
			if err := info.VerifyCA(e.ca); err != nil {
				t.Errorf("the data does not trust the cluster CA: %v", err)
			}
			if info.NodeLabels[external.TenantClusterLabel] != cluster || len(info.NodeTaints) != 1 || info.NodeTaints[0].Key != "dedicated" {
				t.Errorf("labels %v taints %v", info.NodeLabels, info.NodeTaints)
			}

			toks := e.tenantTokens()
			if len(toks) != 1 {
				t.Fatalf("tenant has %d token Secrets, want 1", len(toks))
			}
			token, expires, err := bootstrapdata.TokenFromSecret(&toks[0])
			if err != nil {
				t.Fatal(err)
			}
			if token != info.Token {
				t.Errorf("the data carries token %s, the tenant has %s", bootstrapdata.TokenID(info.Token), bootstrapdata.TokenID(token))
			}
			if got := expires.Sub(e.now); got < 14*time.Minute || got > 15*time.Minute+time.Second {
				t.Errorf("token expires in %s, want the 15m TTL", got)
			}
			if string(toks[0].Data["auth-extra-groups"]) != bootstrapdata.NodeTokenGroup || toks[0].Labels[ConfigUIDLabel] != configUID {
				t.Errorf("token Secret = %+v", toks[0])
			}

			// A second pass keeps the token and the data.
			before := s.Data["value"]
			if err := e.reconcile(); !isRequeue(err) {
				t.Fatalf("second Reconcile = %v", err)
			}
			if s, _ := e.dataSecret(); string(s.Data["value"]) != string(before) {
				t.Error("a second reconcile changed the data")
			}
			if n := len(e.tenantTokens()); n != 1 {
				t.Errorf("a second reconcile left %d tokens, want 1", n)
			}
		})
	}
}

// TestWaitsForControlPlane: nothing is minted or written before the Cluster's control plane is
// initialized; the Cluster's update makes it happen.
func TestWaitsForControlPlane(t *testing.T) {
	ca := testCA(t)
	e := newEnv(t, []runtime.Object{configObj("rocky"), machineObj(), clusterObj(false)}, caSecret(ca), kubeconfigSecret())
	if err := e.reconcile(); err != nil {
		t.Fatalf("Reconcile = %v, want nil (the Cluster watch brings it back)", err)
	}
	e.wantCondition(metav1.ConditionFalse, ReasonWaitingForControlPlane, PhasePending)
	if _, err := e.dataSecret(); !apierrors.IsNotFound(err) {
		t.Errorf("data Secret before the control plane: err = %v", err)
	}
	if n := len(e.tenantTokens()); n != 0 {
		t.Errorf("%d tokens minted before the control plane", n)
	}
	// The Cluster watch maps the Cluster to this config.
	if keys := e.c.configsOfCluster(clusterObj(true)); !reflect.DeepEqual(keys, []string{ns + "/" + configN}) {
		t.Errorf("configsOfCluster = %v", keys)
	}
	if _, err := e.dyn.Resource(clusterGVR).Namespace(ns).Update(e.ctx, clusterObj(true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(e.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		o, err := e.c.clusters.ByNamespace(ns).Get(cluster)
		if err != nil {
			return false, nil
		}
		cl, _ := external.FromObject[clusterv1.Cluster](o)
		return cl.Status.Initialization.ControlPlaneInitialized != nil && *cl.Status.Initialization.ControlPlaneInitialized, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile(); !isRequeue(err) {
		t.Fatalf("Reconcile = %v", err)
	}
	e.wantCondition(metav1.ConditionTrue, ReasonDataSecretCreated, PhaseReady)
}

// TestFailuresAreConditions: every failure is a condition with a reason, no data Secret and
// no panic.
func TestFailuresAreConditions(t *testing.T) {
	ca := testCA(t)
	noEndpoint := clusterObj(true)
	unstructured.RemoveNestedField(noEndpoint.Object, "spec", "controlPlaneEndpoint")
	noVersion := machineObj()
	unstructured.RemoveNestedField(noVersion.Object, "spec", "version")
	badDNS := configObj("talos")
	_ = unstructured.SetNestedField(badDNS.Object, "kube-dns", "spec", "clusterDNS")
	orphan := configObj("talos")
	unstructured.RemoveNestedField(orphan.Object, "metadata", "ownerReferences")
	badTTL := configObj("talos")
	_ = unstructured.SetNestedField(badTTL.Object, "soon", "spec", "tokenTTL")

	cases := []struct {
		name    string
		dyn     []runtime.Object
		kube    []runtime.Object
		tenant  func(*kubefake.Clientset)
		reason  string
		phase   string
		wantErr bool
	}{
		{name: "unknown OS", dyn: []runtime.Object{configObj("windows"), machineObj(), clusterObj(true)},
			kube: []runtime.Object{caSecret(ca), kubeconfigSecret()}, reason: ReasonInvalidSpec, phase: PhaseFailed},
		{name: "bad token TTL", dyn: []runtime.Object{badTTL, machineObj(), clusterObj(true)},
			kube: []runtime.Object{caSecret(ca), kubeconfigSecret()}, reason: ReasonInvalidSpec, phase: PhaseFailed},
		{name: "no Machine owner", dyn: []runtime.Object{orphan, clusterObj(true)},
			kube: []runtime.Object{caSecret(ca), kubeconfigSecret()}, reason: ReasonWaitingForMachine, phase: PhasePending},
		{name: "no Machine", dyn: []runtime.Object{configObj("talos"), clusterObj(true)},
			kube: []runtime.Object{caSecret(ca), kubeconfigSecret()}, reason: ReasonWaitingForMachine, phase: PhasePending},
		{name: "no Cluster", dyn: []runtime.Object{configObj("talos"), machineObj()},
			kube: []runtime.Object{caSecret(ca), kubeconfigSecret()}, reason: ReasonWaitingForCluster, phase: PhasePending},
		{name: "no endpoint", dyn: []runtime.Object{configObj("talos"), machineObj(), noEndpoint},
			kube: []runtime.Object{caSecret(ca), kubeconfigSecret()}, reason: ReasonWaitingForEndpoint, phase: PhasePending},
		{name: "no CA Secret", dyn: []runtime.Object{configObj("talos"), machineObj(), clusterObj(true)},
			kube: []runtime.Object{kubeconfigSecret()}, reason: ReasonCASecretNotFound, phase: PhaseFailed, wantErr: true},
		{name: "CA not a certificate", dyn: []runtime.Object{configObj("talos"), machineObj(), clusterObj(true)},
			kube: []runtime.Object{caSecret([]byte("garbage")), kubeconfigSecret()}, reason: ReasonInvalidCA, phase: PhaseFailed, wantErr: true},
		{name: "no kubeconfig", dyn: []runtime.Object{configObj("talos"), machineObj(), clusterObj(true)},
			kube: []runtime.Object{caSecret(ca)}, reason: ReasonWaitingForKubeconfig, phase: PhasePending},
		{name: "tenant unreachable", dyn: []runtime.Object{configObj("talos"), machineObj(), clusterObj(true)},
			kube: []runtime.Object{caSecret(ca), kubeconfigSecret()}, reason: ReasonTenantUnreachable, phase: PhaseFailed, wantErr: true,
			tenant: func(c *kubefake.Clientset) {
				c.PrependReactor("*", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("dial tcp 127.0.0.1:46443: connect: connection refused")
				})
			}},
		{name: "no Machine version", dyn: []runtime.Object{configObj("talos"), noVersion, clusterObj(true)},
			kube: []runtime.Object{caSecret(ca), kubeconfigSecret()}, reason: ReasonMachineVersionMissing, phase: PhaseFailed},
		{name: "renderer rejects the spec", dyn: []runtime.Object{badDNS, machineObj(), clusterObj(true)},
			kube: []runtime.Object{caSecret(ca), kubeconfigSecret()}, reason: ReasonInvalidSpec, phase: PhaseFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.dyn, tc.kube...)
			if tc.tenant != nil {
				tc.tenant(e.tenant)
			}
			err := e.reconcile()
			if tc.wantErr && err == nil {
				t.Error("Reconcile = nil, want an error or a requeue to look again")
			}
			if !tc.wantErr && err != nil {
				t.Errorf("Reconcile = %v, want nil (a watch brings it back)", err)
			}
			e.wantCondition(metav1.ConditionFalse, tc.reason, tc.phase)
			if _, err := e.dataSecret(); !apierrors.IsNotFound(err) {
				t.Errorf("a data Secret was written: err = %v", err)
			}
			if tc.tenant == nil {
				if n := len(e.tenantTokens()); n != 0 {
					t.Errorf("%d tokens left in the tenant by a failed reconcile", n)
				}
			}
		})
	}
}

// TestTokenRefreshAndReplace: a token a third of whose TTL is gone is extended; a token the
// tenant no longer has is replaced and the data re-rendered with the new one.
func TestTokenRefreshAndReplace(t *testing.T) {
	e := readyEnv(t, "flatcar")
	if err := e.reconcile(); !isRequeue(err) {
		t.Fatal(err)
	}
	first := e.tenantTokens()[0]
	_, exp1, _ := bootstrapdata.TokenFromSecret(&first)

	e.now = e.now.Add(6 * time.Minute)
	if err := e.reconcile(); !isRequeue(err) {
		t.Fatal(err)
	}
	toks := e.tenantTokens()
	if len(toks) != 1 || toks[0].Name != first.Name {
		t.Fatalf("tokens after refresh = %d (%v), want the same one", len(toks), toks)
	}
	_, exp2, _ := bootstrapdata.TokenFromSecret(&toks[0])
	if !exp2.After(exp1) || exp2.Sub(e.now) < 14*time.Minute {
		t.Errorf("expiration %v -> %v, want pushed to now+15m", exp1, exp2)
	}

	if err := e.tenant.CoreV1().Secrets("kube-system").Delete(e.ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile(); !isRequeue(err) {
		t.Fatal(err)
	}
	toks = e.tenantTokens()
	if len(toks) != 1 || toks[0].Name == first.Name {
		t.Fatalf("tokens after the tenant lost one = %v, want one new", toks)
	}
	s, _ := e.dataSecret()
	info, err := bootstrapdata.Parse(bootstrapdata.OSFlatcar, s.Data["value"])
	if err != nil {
		t.Fatal(err)
	}
	if bootstrapdata.TokenSecretName(info.Token) != toks[0].Name {
		t.Errorf("the data carries %s, the tenant has %s", bootstrapdata.TokenSecretName(info.Token), toks[0].Name)
	}
}

// TestTokenRemovedWhenJoined: once the Machine has a nodeRef the config's token leaves the tenant.
func TestTokenRemovedWhenJoined(t *testing.T) {
	e := readyEnv(t, "bottlerocket")
	if err := e.reconcile(); !isRequeue(err) {
		t.Fatal(err)
	}
	// Someone else's token stays.
	other, _ := bootstrapdata.TokenSecret("zzzzzz.0123456789abcdef", e.now.Add(time.Hour), "kubeadm's", nil)
	if _, err := e.tenant.CoreV1().Secrets("kube-system").Create(e.ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := machineObj()
	_ = unstructured.SetNestedField(m.Object, machineN, "status", "nodeRef", "name")
	if _, err := e.dyn.Resource(machineGVR).Namespace(ns).Update(e.ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if keys := configOfMachine(m); !reflect.DeepEqual(keys, []string{ns + "/" + configN}) {
		t.Errorf("configOfMachine = %v", keys)
	}
	if err := wait.PollUntilContextTimeout(e.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		o, err := e.c.machines.ByNamespace(ns).Get(machineN)
		if err != nil {
			return false, nil
		}
		mm, _ := external.FromObject[clusterv1.Machine](o)
		return mm.Status.NodeRef.Name != "", nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile(); err != nil {
		t.Fatalf("Reconcile of a joined machine = %v, want nil", err)
	}
	toks := e.tenantTokens()
	if len(toks) != 1 || toks[0].Name != other.Name {
		t.Errorf("tenant tokens = %v, want only the unrelated one", toks)
	}
	e.wantCondition(metav1.ConditionTrue, ReasonDataSecretCreated, PhaseReady)
	if bc := e.config(); bc.Status.DataSecretName == nil || *bc.Status.DataSecretName != configN {
		t.Errorf("status.dataSecretName lost after the join: %v", bc.Status.DataSecretName)
	}
}

// TestDeletionRemovesTokens: a deleted config's tokens leave the tenant, then the finalizer goes.
func TestDeletionRemovesTokens(t *testing.T) {
	e := readyEnv(t, "kairos")
	if err := e.reconcile(); !isRequeue(err) {
		t.Fatal(err)
	}
	if n := len(e.tenantTokens()); n != 1 {
		t.Fatalf("%d tokens", n)
	}
	obj, _ := e.dyn.Resource(configGVR).Namespace(ns).Get(e.ctx, configN, metav1.GetOptions{})
	now := metav1.NewTime(e.now)
	obj.SetDeletionTimestamp(&now)
	if _, err := e.dyn.Resource(configGVR).Namespace(ns).Update(e.ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if err := e.reconcile(); err != nil {
		t.Fatalf("Reconcile of a deleted config = %v", err)
	}
	if n := len(e.tenantTokens()); n != 0 {
		t.Errorf("%d tokens left after deletion", n)
	}
	if f := e.config().Finalizers; len(f) != 0 {
		t.Errorf("finalizers = %v, want none", f)
	}
}

// TestIdleWithoutCRDs: a management cluster without the CRDs gets an idle controller, not an error
// that would stop the others.
func TestIdleWithoutCRDs(t *testing.T) {
	kube := kubefake.NewClientset()
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	c, err := New(&controllerkit.Deps{Kube: kube, Dynamic: dyn, DynamicInformers: dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if c.idle == nil {
		t.Fatal("want an idle controller")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.Run(ctx) // returns at once on a cancelled context
}
