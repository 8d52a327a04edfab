package localplane

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnvDefaults(t *testing.T) {
	o, err := FromEnv("/repo", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.Dir != "/repo/_output/local" || o.Bin != "/repo/_output/bin" || o.KubeVersionsDir != "/repo/_output/kube-versions" ||
		o.NodeImagesDir != "/repo/_output/node-images" {
		t.Errorf("directories: %+v", o)
	}
	if o.Replicas != 1 || o.RestartGrace != 3*time.Second || o.TenantPorts != localports.Tenants || o.ControllerManagerQPS != 300 || len(o.FixedPorts) != 0 {
		t.Errorf("defaults: %+v", o)
	}
}

func TestFromEnvReadsTheContract(t *testing.T) {
	o, err := FromEnv("/repo", env(map[string]string{
		"LOCAL_DIR": "/tmp/plane", "BIN": "/opt/bin", "KUBE_APISERVER_PORT": "12345", "ETCD_PORT": "12346",
		"BUTLER_APISERVER_ARGS": " --a=1  --b ", "BUTLER_LOCALPROVIDER_ARGS": "--c",
		"BUTLER_APISERVER_REPLICAS": "3", "RESTART_GRACE": "0.5", "TENANT_PORT_RANGE": "20000-20100",
		"KUBE_CONTROLLER_MANAGER_QPS": "50",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if o.Dir != "/tmp/plane" || o.Bin != "/opt/bin" {
		t.Errorf("directories: %s %s", o.Dir, o.Bin)
	}
	if o.FixedPorts["KUBE_APISERVER_PORT"] != 12345 || o.FixedPorts["ETCD_PORT"] != 12346 || len(o.FixedPorts) != 2 {
		t.Errorf("fixed ports: %v", o.FixedPorts)
	}
	if !slices.Equal(o.ButlerAPIServerArgs, []string{"--a=1", "--b"}) || !slices.Equal(o.LocalProviderArgs, []string{"--c"}) {
		t.Errorf("args: %q %q", o.ButlerAPIServerArgs, o.LocalProviderArgs)
	}
	if o.Replicas != 3 || o.RestartGrace != 500*time.Millisecond || o.TenantPorts != (localports.Range{Min: 20000, Max: 20100}) || o.ControllerManagerQPS != 50 {
		t.Errorf("numbers: %+v", o)
	}
}

func TestFromEnvRefusesBadValues(t *testing.T) {
	for name, value := range map[string]string{
		"ETCD_PORT": "http", "BUTLER_APISERVER_REPLICAS": "0", "RESTART_GRACE": "soon", "TENANT_PORT_RANGE": "9-1",
		"KUBE_CONTROLLER_MANAGER_QPS": "-1", "BUTLER_APISERVER_PORT": "70000",
	} {
		if _, err := FromEnv("/repo", env(map[string]string{name: value})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v, want an error naming it", name, value, err)
		}
	}
}

// pick keeps the ports the environment fixed, never hands out one twice or one of the tenants'
// range, and says when it changed nothing (all fixed: no new port to try).
func TestPortsPick(t *testing.T) {
	offers := []int{31000, 12000, 12000, 13000, 14000}
	p := newPorts(map[string]int{"KUBE_APISERVER_PORT": 14000}, localports.Range{Min: 30000, Max: 32000})
	p.free = func() (int, error) { port := offers[0]; offers = offers[1:]; return port, nil }
	changed, err := p.pick([]string{"ETCD_PORT", "KUBE_APISERVER_PORT", "ETCD_PEER_PORT"})
	if err != nil || !changed {
		t.Fatalf("pick: %v %v", changed, err)
	}
	if p.get("ETCD_PORT") != 12000 || p.get("ETCD_PEER_PORT") != 13000 || p.get("KUBE_APISERVER_PORT") != 14000 {
		t.Errorf("ports: %v", p.values)
	}
	if changed, err := p.pick([]string{"KUBE_APISERVER_PORT"}); changed || err != nil {
		t.Errorf("picking a fixed port again: changed %v, %v", changed, err)
	}
}

func TestParseListening(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0000000000000000 20 4 30 10 -1
   2: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 333 1 0000000000000000 100 0 0 10 0
`
	if got := parseListening(table, 0x1F90); len(got) != 1 || !got["111"] {
		t.Errorf("port 8080: %v, want the listening socket 111 only (222 is a connection)", got)
	}
	if got := parseListening(table, 0x1F91); len(got) != 1 || !got["333"] {
		t.Errorf("port 8081 on any address: %v", got)
	}
}

func TestIsLeftover(t *testing.T) {
	o := Options{Bin: "/r/_output/bin", KubeVersionsDir: "/r/_output/kube-versions", Dir: "/tmp/plane"}
	for cmdline, want := range map[string]bool{
		"/r/_output/bin/etcd --data-dir /tmp/plane/etcd":                                  true,
		"/r/_output/kube-versions/v1.35.4/kube-apiserver --cert-dir /tmp/plane/tenants/a": true,
		"/r/_output/bin/etcd --data-dir /tmp/plane2/etcd":                                 false, // another plane's
		"/usr/bin/etcd --data-dir /tmp/plane/etcd":                                        false,
		"/r/_output/bin/butler-localplane":                                                false, // the plane's command names no directory
	} {
		if got := o.isLeftover(cmdline); got != want {
			t.Errorf("%q: %v, want %v", cmdline, got, want)
		}
	}
}

func TestNodeImagesAddsFluxWhenBuilt(t *testing.T) {
	dir := t.TempDir()
	base := strings.Join([]string{dir + "/pause.oci.tar", dir + "/echo.oci.tar", dir + "/coredns.oci.tar"}, ",")
	if got := nodeImages(dir); got != base {
		t.Errorf("without Flux: %s", got)
	}
	for _, f := range []string{"flux-source-controller.oci.tar", "flux-kustomize-controller.oci.tar"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := base + "," + dir + "/flux-source-controller.oci.tar," + dir + "/flux-kustomize-controller.oci.tar"
	if got := nodeImages(dir); got != want {
		t.Errorf("with Flux: %s", got)
	}
}

// The replicas beyond the first are named and ported apart, and each gets the extra flags.
func TestButlerAPIServerReplicas(t *testing.T) {
	pl := &plane{o: Options{Bin: "/b", Dir: "/d", Replicas: 3, ButlerAPIServerArgs: []string{"--x"}}}
	pl.ports = newPorts(map[string]int{"BUTLER_APISERVER_PORT": 1, "BUTLER_APISERVER_1_PORT": 2, "BUTLER_APISERVER_2_PORT": 3, "ETCD_PORT": 4}, localports.Tenants)
	replicas := pl.butlerAPIServers()
	for i, want := range []struct{ name, port, dataDir string }{
		{"butler-apiserver", "1", "/d/butler-apiserver"},
		{"butler-apiserver-1", "2", "/d/butler-apiserver-1"},
		{"butler-apiserver-2", "3", "/d/butler-apiserver-2"},
	} {
		args := replicas[i].args()
		if replicas[i].name != want.name || flag(args, "--secure-port") != want.port || flag(args, "--data-dir") != want.dataDir ||
			args[len(args)-1] != "--x" || args[0] != "/b/butler-apiserver" {
			t.Errorf("replica %d: %s %q", i, replicas[i].name, args)
		}
	}
	if kind("butler-apiserver-2") != "butler-apiserver" || kind("kube-apiserver") != "kube-apiserver" {
		t.Error("kind does not strip a replica's suffix")
	}
}

func flag(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

func TestReadManifests(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "# comment\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n")
	write("b.json", `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c"}}`)
	write("README.md", "not a manifest")
	files, err := manifestsIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := readManifests(files...)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("objects %v, want a b c", names)
	}
}

// A second start on the same directory keeps the CA (its clients' trust), and the kubeconfigs
// trust it and present a certificate it signed.
func TestCertificatesKeptAndKubeconfig(t *testing.T) {
	dir := t.TempDir()
	ca, err := ensureCertificates(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ensureCertificates(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ca.CertPEM, again.CertPEM) {
		t.Error("the CA was made again")
	}
	for _, f := range []string{"ca.crt", "front-proxy-ca.crt", "kube-apiserver.crt", "front-proxy-client.key", "sa.key", "sa.pub", "capi-webhook.crt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	file := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := writeKubeconfig(file, dir, "admin", "admin", "https://127.0.0.1:1", ca); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", file)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := pki.Parse(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cfg.CAData, ca.CertPEM) || kp.Cert.CheckSignatureFrom(ca.Cert) != nil || kp.Cert.Subject.Organization[0] != "system:masters" {
		t.Errorf("the kubeconfig does not trust the CA or present the admin's certificate: %s", kp.Cert.Subject)
	}
}

// The deploy manifests carry what kubectl apply leaves, so that a later kubectl apply of the
// same files does not warn (test/e2e/plane's chart test fails on any warning).
func TestLastAppliedIsTheObjectAsRead(t *testing.T) {
	objs, err := readManifests(writeTemp(t, "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a, namespace: ns, annotations: {team: blue}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(objs[0].Object)
	if objs, err = lastApplied(objs); err != nil {
		t.Fatal(err)
	}
	got := objs[0].GetAnnotations()
	if got[corev1.LastAppliedConfigAnnotation] != string(want)+"\n" || got["team"] != "blue" {
		t.Errorf("annotations %v, want team and the object as read: %s", got, want)
	}
}

func writeTemp(t *testing.T, data string) string {
	file := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
