package machines

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// TestBootstrapData: a machine reads only the data Secret its Machine names, as an image of the
// OS the Secret's annotation names, delivered in the contract's data.format that OS's agent
// reads; until that is all there, the condition says what is missing.
func TestBootstrapData(t *testing.T) {
	ca := newTestCA(t)
	valid, err := bootstrap.Render(bootstrap.OSTalos, bootstrap.Input{Endpoint: testEndpoint, Token: testToken,
		CACert: ca.pem, NodeName: "worker-0", KubernetesVersion: "v1.36.3"})
	if err != nil {
		t.Fatal(err)
	}
	rocky := func(version string) []byte {
		data, err := bootstrap.Render(bootstrap.OSRocky, bootstrap.Input{Endpoint: testEndpoint, Token: testToken,
			CACert: ca.pem, NodeName: "worker-0", KubernetesVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	name := "data"
	machineAt := func(version string, dataSecret *string) *unstructured.Unstructured {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "tenant"},
			Spec: clusterv1.MachineSpec{ClusterName: "prod", Version: version, Bootstrap: clusterv1.Bootstrap{DataSecretName: dataSecret}}}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: u}
	}
	machine := func(dataSecret *string) *unstructured.Unstructured { return machineAt("v1.36.3", dataSecret) }
	flatcar, err := bootstrap.Render(bootstrap.OSFlatcar, bootstrap.Input{Endpoint: testEndpoint, Token: testToken,
		CACert: ca.pem, NodeName: "worker-0", KubernetesVersion: "v1.36.3"})
	if err != nil {
		t.Fatal(err)
	}
	// secretAs is a data Secret with data.format set (none when format is "").
	secretAs := func(os, format string, data []byte) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"}, Data: map[string][]byte{"value": data}}
		if os != "" {
			s.Annotations = map[string]string{bootstrap.OSAnnotation: os}
		}
		if format != "" {
			s.Data["format"] = []byte(format)
		}
		return s
	}
	secret := func(os string, data []byte) *corev1.Secret { return secretAs(os, "cloud-config", data) }
	owned := []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: "m"}}
	cases := []struct {
		name    string
		owners  []metav1.OwnerReference
		machine *unstructured.Unstructured
		secret  *corev1.Secret
		reason  string // "" when the data is read
		kubelet string // the version the machine's kubelet reports, when the data is read
	}{
		{"no Machine owns it", nil, machine(&name), secret("talos", valid), ReasonWaitingForMachine, ""},
		{"the Machine has no data yet", owned, machine(nil), nil, ReasonWaitingForBootstrapData, ""},
		{"the data Secret is not there", owned, machine(&name), nil, ReasonWaitingForBootstrapData, ""},
		{"no OS annotation", owned, machine(&name), secret("", valid), ReasonBootstrapDataInvalid, ""},
		// Cluster API's providers hand data without data.format over as cloud-config: Ignition
		// would be given to a Flatcar machine as user data, which Ignition does not read.
		{"flatcar data without data.format", owned, machine(&name), secretAs("flatcar", "", flatcar), ReasonBootstrapDataInvalid, ""},
		{"flatcar data as cloud-config", owned, machine(&name), secretAs("flatcar", "cloud-config", flatcar), ReasonBootstrapDataInvalid, ""},
		{"flatcar data as ignition", owned, machine(&name), secretAs("flatcar", "ignition", flatcar), "", "v1.36.3"},
		{"talos data as ignition", owned, machine(&name), secretAs("talos", "ignition", valid), ReasonBootstrapDataInvalid, ""},
		{"talos data without data.format (cloud-config)", owned, machine(&name), secretAs("talos", "", valid), "", "v1.36.3"},
		{"data in another format than annotated", owned, machine(&name), secret("bottlerocket", valid), ReasonBootstrapDataInvalid, ""},
		{"data the OS cannot read", owned, machine(&name), secret("talos", []byte("not yaml: [")), ReasonBootstrapDataInvalid, ""},
		{"talos data", owned, machine(&name), secret("talos", valid), "", "v1.36.3"},
		// A Rocky image of the Machine's version: its kubelet is of that version, and its
		// kubeadm 1.30 cannot read the v1beta4 JoinConfiguration written for 1.31 and later.
		{"rocky data of the Machine's version", owned, machineAt("v1.30.1", &name), secret("rocky", rocky("v1.30.1")), "", "v1.30.1"},
		{"rocky data newer than the Machine's kubeadm", owned, machineAt("v1.30.2", &name), secret("rocky", rocky("v1.36.3")), ReasonBootstrapDataInvalid, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if tc.secret != nil {
				_ = secrets.Add(tc.secret)
			}
			c := &Controller{capi: cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0,
				cache.Indexers{byDataSecret: indexByDataSecret}), secrets: corelisters.NewSecretLister(secrets)}
			if err := c.capi.GetIndexer().Add(tc.machine); err != nil {
				t.Fatal(err)
			}
			lm := &external.LocalMachine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "tenant", OwnerReferences: tc.owners}}
			info, cond := c.bootstrapData(lm)
			switch {
			case tc.reason == "" && cond != nil:
				t.Fatalf("got condition %s: %s; want the data", cond.Reason, cond.Message)
			case tc.reason == "" && (info.NodeName != "worker-0" || info.Endpoint != testEndpoint || info.Token != testToken):
				t.Fatalf("read %+v", info)
			case tc.reason != "" && (cond == nil || cond.Reason != tc.reason || cond.Status != metav1.ConditionFalse):
				t.Fatalf("got %+v, want a False condition with reason %s", cond, tc.reason)
			case tc.reason == "" && info.KubernetesVersion != tc.kubelet:
				t.Fatalf("kubelet version %q, want %q", info.KubernetesVersion, tc.kubelet)
			}
		})
	}
}

// TestClusterReadiness: a LocalCluster is provisioned once its control plane endpoint is set
// and the cluster's kubeconfig Secret exists (Cluster API's ClusterCache connects the moment it
// is, and waits 30 s after a failed connect), and stays provisioned when the Secret goes; one
// whose control plane is external waits for the endpoint only.
func TestClusterReadiness(t *testing.T) {
	yes := true
	endpoint := external.APIEndpoint{Host: "127.0.0.1", Port: 36001}
	cases := []struct {
		name        string
		endpoint    external.APIEndpoint
		was         bool
		kubeconfig  bool
		external    bool
		provisioned bool
		reason      string
	}{
		{"no endpoint", external.APIEndpoint{}, false, true, false, false, ReasonWaitingForControlPlaneEndpoint},
		{"an endpoint, no kubeconfig yet", endpoint, false, false, false, false, ReasonWaitingForKubeconfig},
		{"an endpoint and the kubeconfig", endpoint, false, true, false, true, ReasonProvisioned},
		{"provisioned before, the kubeconfig gone", endpoint, true, false, false, true, ReasonProvisioned},
		// The real Steward provider writes the kubeconfig only after the infrastructure is
		// provisioned: waiting for it would wait for ever.
		{"an endpoint, no kubeconfig, an external control plane", endpoint, false, false, true, true, ReasonProvisioned},
		{"no endpoint, an external control plane", external.APIEndpoint{}, false, false, true, false, ReasonWaitingForControlPlaneEndpoint},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lc := &external.LocalCluster{}
			lc.Spec.ControlPlaneEndpoint = tc.endpoint
			if tc.was {
				lc.Status.Initialization = &external.InfrastructureInitialization{Provisioned: &yes}
			}
			provisioned, cond := clusterReadiness(lc, "prod", tc.kubeconfig, tc.external)
			if provisioned != tc.provisioned || cond.Reason != tc.reason {
				t.Fatalf("provisioned %v, reason %s; want %v, %s", provisioned, cond.Reason, tc.provisioned, tc.reason)
			}
			if want := map[bool]metav1.ConditionStatus{true: metav1.ConditionTrue, false: metav1.ConditionFalse}[provisioned]; cond.Status != want {
				t.Fatalf("condition %s, want %s", cond.Status, want)
			}
		})
	}
}

func TestIsPaused(t *testing.T) {
	cluster := func(paused any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		if paused != nil {
			u.Object["spec"].(map[string]any)["paused"] = paused
		}
		return u
	}
	for _, tt := range []struct {
		name        string
		cluster     *unstructured.Unstructured
		annotations map[string]string
		want        bool
	}{
		{"no Cluster", nil, nil, false},
		{"running", cluster(nil), nil, false},
		{"unpaused", cluster(false), nil, false},
		{"Cluster paused (hibernated)", cluster(true), nil, true},
		{"LocalCluster annotated paused", cluster(nil), map[string]string{clusterv1.PausedAnnotation: ""}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var obj runtime.Object
			if tt.cluster != nil {
				obj = tt.cluster
			}
			if got := isPaused(obj, tt.annotations); got != tt.want {
				t.Errorf("isPaused = %v, want %v", got, tt.want)
			}
		})
	}
}

// A failed join is not tried again before its backoff is over, whatever brings the machine back
// meanwhile (its own status write, its Machine's, a Secret's): before, each event started a new
// try at once, so a node failing to boot was booted back to back with no pause between tries.
func TestAJoinWaitsOutItsBackoff(t *testing.T) {
	c := &Controller{opts: Options{RetryAfter: time.Minute, MaxRetryAfter: 4 * time.Minute}}
	if wait := c.backingOff("ns/m0"); wait != 0 {
		t.Fatalf("a machine that never failed waits %s before its join, want 0", wait)
	}
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 4 * time.Minute} {
		if got := c.retryAfter("ns/m0"); got != want {
			t.Errorf("failure %d: tried again after %s, want %s", i+1, got, want)
		}
		if wait := c.backingOff("ns/m0"); wait <= want-time.Second || wait > want {
			t.Errorf("failure %d: an event right after it finds %s left to wait, want about %s", i+1, wait, want)
		}
	}
	if wait := c.backingOff("ns/m1"); wait != 0 {
		t.Errorf("another machine waits %s for m0's failures, want 0", wait)
	}
	c.failures.Delete("ns/m0") // a join that succeeded
	if wait := c.backingOff("ns/m0"); wait != 0 {
		t.Errorf("after a join that succeeded the next waits %s, want 0", wait)
	}
	joined := &Controller{opts: c.opts}
	joined.failures.Store("ns/m0", backoff{failed: 3, next: time.Now().Add(-time.Second)})
	if wait := joined.backingOff("ns/m0"); wait > 0 {
		t.Errorf("a backoff that is over still waits %s", wait)
	}
}
