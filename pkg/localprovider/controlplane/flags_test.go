package controlplane

import (
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubebuild"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if n, v, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); n == name {
			return v, true
		}
	}
	return "", false
}

func testArgs() planeArgs {
	return planeArgs{
		Spec: tenantSpec{Namespace: "t1-abcd1234", Name: "t1", UID: "0b6c-uid", Version: "v1.36.3",
			ServiceCIDR: "10.96.0.0/12", PodCIDR: "10.244.0.0/16", ClusterDomain: "cluster.local",
			AdmissionPlugins: []string{"NamespaceLifecycle", "NodeRestriction", "ResourceQuota"},
			APIServerArgs:    []string{"--v=4", "audit-log-maxage=3"},
		},
		Paths: tenantPaths{dir: "/state/0b6c-uid"}, Address: "127.0.0.1", Port: 30007,
		Etcd: etcdConn{URLs: []string{"https://127.0.0.1:30001", "https://127.0.0.1:30002"}, Prefix: "/0b6c-uid",
			CAFile: "/state/0b6c-uid/pki/datastore-ca.crt", CertFile: "/state/0b6c-uid/pki/datastore-client.crt",
			KeyFile: "/state/0b6c-uid/pki/datastore-client.key"},
	}
}

func TestAPIServerArgs(t *testing.T) {
	args := apiServerArgs(testArgs())
	want := map[string]string{
		"etcd-servers":                  "https://127.0.0.1:30001,https://127.0.0.1:30002",
		"etcd-prefix":                   "/0b6c-uid",
		"etcd-cafile":                   "/state/0b6c-uid/pki/datastore-ca.crt",
		"etcd-certfile":                 "/state/0b6c-uid/pki/datastore-client.crt",
		"etcd-keyfile":                  "/state/0b6c-uid/pki/datastore-client.key",
		"etcd-compaction-interval":      "0",
		"bind-address":                  "127.0.0.1",
		"secure-port":                   "30007",
		"service-cluster-ip-range":      "10.96.0.0/12",
		"client-ca-file":                "/state/0b6c-uid/pki/ca.crt",
		"tls-cert-file":                 "/state/0b6c-uid/pki/apiserver.crt",
		"authorization-mode":            "Node,RBAC",
		"enable-bootstrap-token-auth":   "true",
		"enable-admission-plugins":      "NodeRestriction,NamespaceLifecycle,ResourceQuota",
		"service-account-issuer":        "https://kubernetes.default.svc.cluster.local",
		"service-account-key-file":      "/state/0b6c-uid/pki/sa.pub",
		"requestheader-client-ca-file":  "/state/0b6c-uid/pki/front-proxy-ca.crt",
		"requestheader-allowed-names":   "front-proxy-client",
		"proxy-client-cert-file":        "/state/0b6c-uid/pki/front-proxy-client.crt",
		"kubelet-client-certificate":    "/state/0b6c-uid/pki/apiserver-kubelet-client.crt",
		"kubelet-certificate-authority": "/state/0b6c-uid/pki/ca.crt",
		"endpoint-reconciler-type":      "none",
		"watch-cache":                   "false",
		"v":                             "4", // extra args are appended
		"audit-log-maxage":              "3", // with "--" added when missing
	}
	for name, value := range want {
		if got, ok := flagValue(args, name); !ok || got != value {
			t.Errorf("--%s = %q (present %v), want %q", name, got, ok, value)
		}
	}
	// Every flag that names a file names one in the tenant's directory.
	for _, a := range args {
		if _, v, _ := strings.Cut(a, "="); strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "/state/0b6c-uid/") && !strings.HasPrefix(v, "/0b6c") {
			t.Errorf("%s names a file outside the tenant's directory", a)
		}
	}
}

func TestExtraArgsOverride(t *testing.T) {
	a := testArgs()
	a.Spec.APIServerArgs = []string{"--authorization-mode=RBAC"}
	args := apiServerArgs(a)
	if v, _ := flagValue(args, "authorization-mode"); v != "RBAC" {
		t.Errorf("authorization-mode = %q, want the extra arg's RBAC", v)
	}
	n := 0
	for _, x := range args {
		if strings.HasPrefix(x, "--authorization-mode=") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("--authorization-mode given %d times", n)
	}
}

// A tenant that outgrows reading from etcd may have its watch cache back through extraArgs.
func TestWatchCacheBackThroughExtraArgs(t *testing.T) {
	a := testArgs()
	a.Spec.APIServerArgs = []string{"--watch-cache=true"}
	if v, _ := flagValue(apiServerArgs(a), "watch-cache"); v != "true" {
		t.Errorf("watch-cache = %q, want the extra arg's true", v)
	}
}

func TestControllerManagerArgs(t *testing.T) {
	a := testArgs()
	a.Spec.ControllerManagerArgs = []string{"--node-cidr-mask-size=26"}
	args := controllerManagerArgs(a)
	want := map[string]string{
		"kubeconfig":                       "/state/0b6c-uid/controller-manager.conf",
		"controllers":                      "*,bootstrapsigner,tokencleaner",
		"cluster-signing-cert-file":        "/state/0b6c-uid/pki/ca.crt",
		"cluster-signing-key-file":         "/state/0b6c-uid/pki/ca.key",
		"cluster-signing-duration":         "8760h0m0s",
		"root-ca-file":                     "/state/0b6c-uid/pki/ca.crt",
		"service-account-private-key-file": "/state/0b6c-uid/pki/sa.key",
		"use-service-account-credentials":  "true",
		"cluster-cidr":                     "10.244.0.0/16",
		"allocate-node-cidrs":              "true",
		"secure-port":                      "0",
		"leader-elect":                     "false",
		"cluster-name":                     "t1",
		"node-cidr-mask-size":              "26",
	}
	for name, value := range want {
		if got, ok := flagValue(args, name); !ok || got != value {
			t.Errorf("--%s = %q (present %v), want %q", name, got, ok, value)
		}
	}
	sched := schedulerArgs(a)
	if v, _ := flagValue(sched, "kubeconfig"); v != "/state/0b6c-uid/scheduler.conf" {
		t.Errorf("scheduler --kubeconfig = %q", v)
	}
	if v, _ := flagValue(sched, "secure-port"); v != "0" {
		t.Errorf("scheduler --secure-port = %q", v)
	}
}

func TestParseTenantSpec(t *testing.T) {
	tcp := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "t1", "namespace": "ns", "uid": "u1"},
		"spec": map[string]any{
			"kubernetes":     map[string]any{"version": "1.36.3", "kubelet": map[string]any{"cgroupfs": "cgroupfs"}},
			"networkProfile": map[string]any{"serviceCidr": "10.100.0.0/16", "certSANs": []any{"a.example.com"}, "address": "192.0.2.1"},
			"controlPlane": map[string]any{"deployment": map[string]any{"extraArgs": map[string]any{
				"apiServer": []any{"--v=2"}, "scheduler": []any{"--v=3"}}}},
		},
	}}
	s, err := parseTenantSpec(tcp)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != "v1.36.3" || s.ServiceCIDR != "10.100.0.0/16" || s.PodCIDR != defaultPodCIDR ||
		s.ClusterDomain != "cluster.local" || s.CgroupDriver != "cgroupfs" || s.UID != "u1" {
		t.Errorf("spec = %+v", s)
	}
	if !slices.Equal(s.CertSANs, []string{"a.example.com", "192.0.2.1"}) || !slices.Equal(s.APIServerArgs, []string{"--v=2"}) || !slices.Equal(s.SchedulerArgs, []string{"--v=3"}) {
		t.Errorf("spec = %+v", s)
	}
	if err := unstructured.SetNestedField(tcp.Object, "not-a-cidr", "spec", "networkProfile", "serviceCidr"); err != nil {
		t.Fatal(err)
	}
	if _, err := parseTenantSpec(tcp); err == nil {
		t.Error("a bad service CIDR parsed")
	}
}

func TestServiceIPs(t *testing.T) {
	if ip, _ := firstServiceIP("10.96.0.0/12"); ip.String() != "10.96.0.1" {
		t.Errorf("first = %v", ip)
	}
	if ip, _ := nthServiceIP("10.96.0.0/12", 10); ip.String() != "10.96.0.10" {
		t.Errorf("10th = %v", ip)
	}
	if ip, _ := nthServiceIP("10.96.0.0/16", 300); ip.String() != "10.96.1.44" {
		t.Errorf("300th = %v", ip)
	}
	if _, err := nthServiceIP("10.96.0.0/30", 10); err == nil {
		t.Error("10th address of a /30")
	}
}

// While a rotation is prepared kube-apiserver trusts client certificates of both CAs and tokens
// of both service-account keys (signing with the new one), and kube-controller-manager
// publishes both CAs to pods; it goes back to the one CA and key once it completes.
func TestArgsWhileRotating(t *testing.T) {
	a := testArgs()
	a.Rotating = true
	api := apiServerArgs(a)
	if v, _ := flagValue(api, "client-ca-file"); v != "/state/0b6c-uid/pki/ca-bundle.crt" {
		t.Errorf("--client-ca-file=%s while rotating, want the bundle", v)
	}
	if v, _ := flagValue(api, "kubelet-certificate-authority"); v != "/state/0b6c-uid/pki/ca-bundle.crt" {
		t.Errorf("--kubelet-certificate-authority=%s while rotating, want the bundle (kubelets' serving certificates of either CA)", v)
	}
	var keys []string
	for _, arg := range api {
		if v, ok := strings.CutPrefix(arg, "--service-account-key-file="); ok {
			keys = append(keys, v)
		}
	}
	if !slices.Equal(keys, []string{"/state/0b6c-uid/pki/sa.pub", "/state/0b6c-uid/pki/sa-previous.pub"}) {
		t.Errorf("--service-account-key-file while rotating: %v, want the new and the previous key", keys)
	}
	if v, _ := flagValue(api, "service-account-signing-key-file"); v != "/state/0b6c-uid/pki/sa.key" {
		t.Errorf("--service-account-signing-key-file=%s, want the new key", v)
	}
	if v, _ := flagValue(controllerManagerArgs(a), "root-ca-file"); v != "/state/0b6c-uid/pki/ca-bundle.crt" {
		t.Errorf("kube-controller-manager --root-ca-file=%s while rotating, want the bundle", v)
	}
	if v, _ := flagValue(controllerManagerArgs(a), "cluster-signing-cert-file"); v != "/state/0b6c-uid/pki/ca.crt" {
		t.Errorf("kube-controller-manager signs with %s, want the new CA", v)
	}
	// The same command line with other credentials is another process.
	s := process.Spec{Component: componentScheduler, Binary: "kube-scheduler", Args: schedulerArgs(a)}
	other := s
	other.Credentials = "after-the-rotation"
	if s.Hash() == other.Hash() {
		t.Error("a process with other credentials keeps the same hash: it would not be restarted")
	}
}

// The tenant's kube-apiserver reads an admission configuration that enforces Pod Security
// baseline by default (an operator's privileged Pod is refused; e2e TestTeamKubeconfigs tries it),
// its own file even when the StewardControlPlane's extra flags name the one in Steward's Pod.
func TestAPIServerEnforcesPodSecurityBaseline(t *testing.T) {
	paths := tenantPaths{dir: t.TempDir()}
	if err := writeAdmissionConfig(paths); err != nil {
		t.Fatal(err)
	}
	spec := tenantSpec{ServiceCIDR: "10.96.0.0/12", APIServerArgs: []string{"--admission-control-config-file=/etc/kubernetes/butler/admission.yaml"}}
	args := apiServerArgs(planeArgs{Spec: spec, Paths: paths})
	if !slices.Contains(args, "--admission-control-config-file="+paths.admissionConfig()) {
		t.Fatalf("no admission configuration of its own in %v", args)
	}
	if n := len(slices.DeleteFunc(slices.Clone(args), func(a string) bool { return flagName(a) != admissionConfigFlag })); n != 1 {
		t.Errorf("--%s given %d times", admissionConfigFlag, n)
	}
	data, err := os.ReadFile(paths.admissionConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: PodSecurity", "enforce: baseline", "namespaces: [kube-system]"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("admission configuration without %q:\n%s", want, data)
		}
	}
}

// Each tenant process the provider starts runs its garbage collector at GOGC=25 (an idle tenant's
// memory is mostly collector headroom, issue 40), the controller manager on one P; the
// datastore's etcd at GOGC=50.
func TestTenantProcessesCollectAtGOGC25(t *testing.T) {
	paths := tenantPaths{dir: "/state/0b6c-uid"}
	for component, want := range map[string][]string{
		componentAPIServer:         {"GOGC=25"},
		componentControllerManager: {"GOGC=25", "GOMAXPROCS=1"},
		componentScheduler:         {"GOGC=25"},
	} {
		spec := (&Controller{}).procSpec(component, kubebuild.Binaries{}, nil, paths)
		if !slices.Equal(spec.Env, want) {
			t.Errorf("%s starts with environment %q, want %q", component, spec.Env, want)
		}
	}
	d := &localDataStore{name: "local", dir: "/state/datastores/local"}
	if env := d.procSpec("/bin/butler-localprovider").Env; !slices.Equal(env, []string{"GOGC=50"}) {
		t.Errorf("the datastore's etcd starts with %q, want GOGC=50", env)
	}
}
