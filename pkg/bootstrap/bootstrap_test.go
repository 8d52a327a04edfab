package bootstrap

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	ignition "github.com/coreos/ignition/v2/config/v3_4"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// caPin is the pin of testdata/ca.crt as openssl computes it:
// openssl x509 -pubkey -noout | openssl pkey -pubin -outform DER | openssl dgst -sha256
const caPin = "sha256:ee0e51b7f9805b5957d6f275fe0089c5d5a579618bd9b1787cca80f3e4cb5121"

func testCA(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// otherCA is a CA the data does not name, for the negative checks.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(2),
		Subject:               pkix.Name{CommonName: "kubernetes"},
		NotBefore:             time.Now(),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func fullInput(t *testing.T) Input {
	return Input{
		ClusterName:       "prod",
		Endpoint:          "prod.prod-1a2b3c4d.example.com:6443",
		Token:             "abcdef.0123456789abcdef",
		CACert:            testCA(t),
		NodeName:          "prod-workers-7d9f8-x2k4q",
		KubernetesVersion: "v1.36.3",
		NodeLabels: map[string]string{
			"butler.butlerlabs.dev/tenant-cluster": "prod",
			"node-role.butlerlabs.dev/worker":      "",
		},
		NodeTaints: []corev1.Taint{
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
			{Key: "example.com/maintenance", Effect: corev1.TaintEffectPreferNoSchedule},
		},
		ClusterDNS:    "10.96.0.10",
		ClusterDomain: "cluster.local",
		PodCIDR:       "10.244.0.0/16",
		ServiceCIDR:   "10.96.0.0/12",
		ProviderID:    "local://prod-1a2b3c4d/prod-workers-7d9f8-x2k4q",
	}
}

func TestGolden(t *testing.T) {
	for _, os := range OSes {
		t.Run(string(os), func(t *testing.T) {
			in := fullInput(t)
			got, err := Render(os, in)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Render(os, in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, again) {
				t.Fatal("two renders of the same input differ")
			}
			golden := filepath.Join("testdata", string(os)+".golden")
			if *update {
				if err := writeFile(golden, got); err != nil {
					t.Fatal(err)
				}
			}
			want, err := readFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (run with -update after checking):\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}

func writeFile(p string, b []byte) error { return os.WriteFile(p, b, 0o644) }
func readFile(p string) ([]byte, error)  { return os.ReadFile(p) }

// TestRoundTrip parses every format back with its own library and compares field by field.
func TestRoundTrip(t *testing.T) {
	for _, version := range []string{"v1.36.3", "v1.30.2"} {
		for _, os := range OSes {
			t.Run(string(os)+"/"+version, func(t *testing.T) {
				in := fullInput(t)
				in.KubernetesVersion = version
				data, err := Render(os, in)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Parse(os, data)
				if err != nil {
					t.Fatalf("Parse: %v\n%s", err, data)
				}
				checkJoinInfo(t, os, in, got)
			})
		}
	}
}

func checkJoinInfo(t *testing.T, os OS, in Input, got JoinInfo) {
	t.Helper()
	if got.Format != os {
		t.Errorf("Format = %q, want %q", got.Format, os)
	}
	if got.Endpoint != in.Endpoint {
		t.Errorf("Endpoint = %q, want %q", got.Endpoint, in.Endpoint)
	}
	if got.Token != in.Token {
		t.Errorf("Token = %q, want %q", got.Token, in.Token)
	}
	switch os {
	case OSTalos, OSBottlerocket:
		if !bytes.Equal(got.CACert, in.CACert) {
			t.Errorf("CACert = %q, want the input CA", got.CACert)
		}
		if got.CACertHashes != nil {
			t.Errorf("CACertHashes = %v, want none", got.CACertHashes)
		}
	default:
		if want := []string{caPin}; !reflect.DeepEqual(got.CACertHashes, want) {
			t.Errorf("CACertHashes = %v, want %v", got.CACertHashes, want)
		}
		if got.CACert != nil {
			t.Errorf("CACert carried, want only the pin")
		}
	}
	if err := got.VerifyCA(in.CACert); err != nil {
		t.Errorf("VerifyCA(the cluster CA) = %v, want nil", err)
	}
	if err := got.VerifyCA(otherCA(t)); err == nil {
		t.Error("VerifyCA(another CA) = nil, want an error")
	}
	if got.NodeName != in.NodeName {
		t.Errorf("NodeName = %q, want %q", got.NodeName, in.NodeName)
	}
	if !reflect.DeepEqual(got.NodeLabels, in.NodeLabels) {
		t.Errorf("NodeLabels = %v, want %v", got.NodeLabels, in.NodeLabels)
	}
	if !reflect.DeepEqual(got.NodeTaints, in.NodeTaints) {
		t.Errorf("NodeTaints = %v, want %v", got.NodeTaints, in.NodeTaints)
	}
	if got.ProviderID != in.ProviderID {
		t.Errorf("ProviderID = %q, want %q", got.ProviderID, in.ProviderID)
	}
	if want := []string{in.ClusterDNS}; !reflect.DeepEqual(got.ClusterDNS, want) {
		t.Errorf("ClusterDNS = %v, want %v", got.ClusterDNS, want)
	}
	if got.ClusterDomain != in.ClusterDomain {
		t.Errorf("ClusterDomain = %q, want %q", got.ClusterDomain, in.ClusterDomain)
	}
	if os == OSTalos && got.KubernetesVersion != in.KubernetesVersion {
		t.Errorf("KubernetesVersion = %q, want %q", got.KubernetesVersion, in.KubernetesVersion)
	}
}

// TestMinimalInput renders without labels, taints, DNS or provider ID: the optional parts
// are absent, not empty values a kubelet would take literally.
func TestMinimalInput(t *testing.T) {
	for _, os := range OSes {
		t.Run(string(os), func(t *testing.T) {
			in := Input{ClusterName: "c", Endpoint: "10.0.0.1:6443", Token: "abcdef.0123456789abcdef",
				CACert: testCA(t), NodeName: "n1", KubernetesVersion: "v1.36.3"}
			data, err := Render(os, in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(os, data)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, data)
			}
			if got.NodeLabels != nil || got.NodeTaints != nil || got.ProviderID != "" || got.ClusterDNS != nil {
				t.Errorf("optional fields present: %+v", got)
			}
			if got.ClusterDomain != DefaultClusterDomain {
				t.Errorf("ClusterDomain = %q, want the default %q", got.ClusterDomain, DefaultClusterDomain)
			}
			if strings.Contains(string(data), "provider-id") {
				t.Errorf("provider-id rendered without a provider ID:\n%s", data)
			}
		})
	}
}

func TestKubeadmAPIVersion(t *testing.T) {
	for v, want := range map[string]string{
		"v1.22.0":       kubeadmV1beta3,
		"v1.30.14":      kubeadmV1beta3,
		"v1.31.0-rc.1":  kubeadmV1beta4,
		"v1.31.0":       kubeadmV1beta4,
		"v1.36.3":       kubeadmV1beta4,
		"1.33.1+vendor": kubeadmV1beta4,
	} {
		if got := kubeadmAPIVersion(v); got != want {
			t.Errorf("kubeadmAPIVersion(%q) = %s, want %s", v, got, want)
		}
	}
	// The kubelet args change shape with the version: a map in v1beta3, a list in v1beta4.
	in := fullInput(t)
	for v, want := range map[string]string{"v1.30.2": "{", "v1.36.3": "["} {
		in.KubernetesVersion = v
		jc, err := newJoinConfiguration(&in, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := string(jc.NodeRegistration.KubeletExtraArgs); !strings.HasPrefix(got, want) {
			t.Errorf("%s: kubeletExtraArgs = %s, want it to start with %s", v, got, want)
		}
	}
}

// TestFlatcarIgnitionParser checks the flatcar output with Ignition's own parser: no errors
// and no warnings in its report, spec 3.4, the kubeadm unit enabled.
func TestFlatcarIgnitionParser(t *testing.T) {
	data, err := Render(OSFlatcar, fullInput(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg, rpt, err := ignition.Parse(data)
	if err != nil {
		t.Fatalf("ignition v3_4.Parse: %v", err)
	}
	if len(rpt.Entries) != 0 {
		t.Errorf("Ignition report not empty: %s", rpt.String())
	}
	if cfg.Ignition.Version != "3.4.0" {
		t.Errorf("ignition.version = %q, want 3.4.0", cfg.Ignition.Version)
	}
	if len(cfg.Systemd.Units) != 1 || cfg.Systemd.Units[0].Name != "kubeadm.service" || !*cfg.Systemd.Units[0].Enabled {
		t.Errorf("units = %+v, want kubeadm.service enabled", cfg.Systemd.Units)
	}
}

// TestFlatcarUnitResolvesAsSystemd: the kubeadm unit's ExecStart= is read as systemd reads it on
// a Flatcar image with kubeadm in /opt/bin. A bare name is looked up in ExecSearchPath= or in
// systemd's own fixed path — never in Environment=PATH — so a unit that relies on the latter
// never joins on a real node and must not parse here.
func TestFlatcarUnitResolvesAsSystemd(t *testing.T) {
	good, err := Render(OSFlatcar, fullInput(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(OSFlatcar, good); err != nil {
		t.Fatalf("the rendered data does not parse: %v", err)
	}
	unit := func(service string) []byte {
		cfg, _, err := ignition.Parse(good)
		if err != nil {
			t.Fatal(err)
		}
		contents := strings.Replace(flatcarUnit, "ExecSearchPath=/opt/bin:/usr/bin:/usr/sbin:/bin:/sbin\nExecStart=kubeadm join", service, 1)
		cfg.Systemd.Units[0].Contents = &contents
		out, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	join := " join --config " + flatcarJoinPath
	cases := []struct {
		name, service string
		ok            bool
	}{
		{"PATH in Environment=, which systemd does not search", "Environment=PATH=/opt/bin:/usr/bin\nExecStart=kubeadm" + join, false},
		{"in systemd's fixed path, not on the image", "ExecStart=kubeadm" + join, false},
		{"an absolute path", "ExecStart=/opt/bin/kubeadm" + join, true},
		{"an absolute path with systemd's prefix", "ExecStart=-/opt/bin/kubeadm" + join, true},
		{"an absolute path not on the image", "ExecStart=/usr/bin/kubeadm" + join, false},
		{"a relative path", "ExecStart=bin/kubeadm" + join, false},
		{"ExecSearchPath=", "ExecSearchPath=/usr/bin:/opt/bin\nExecStart=kubeadm" + join, true},
		{"a relative ExecSearchPath=", "ExecSearchPath=opt/bin\nExecStart=kubeadm" + join, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(OSFlatcar, unit(tc.service))
			if (err == nil) != tc.ok {
				t.Fatalf("Parse: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestTalosCarriesClusterFields(t *testing.T) {
	data, err := Render(OSTalos, fullInput(t))
	if err != nil {
		t.Fatal(err)
	}
	var cfg talosConfig
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster.Network.PodSubnets[0] != "10.244.0.0/16" || cfg.Cluster.Network.ServiceSubnets[0] != "10.96.0.0/12" {
		t.Errorf("cluster.network = %+v", cfg.Cluster.Network)
	}
	if cfg.Cluster.ClusterName != "prod" || cfg.Machine.Type != "worker" || cfg.Machine.Token == "" || cfg.Machine.CA.Crt == "" {
		t.Errorf("config = %+v", cfg)
	}
	if cfg.Cluster.ControlPlane.Endpoint != "https://prod.prod-1a2b3c4d.example.com:6443" {
		t.Errorf("cluster.controlPlane.endpoint = %q", cfg.Cluster.ControlPlane.Endpoint)
	}
}

// TestSameKeyTaints: Bottlerocket keeps several effects of one key (a list per key); Talos
// has one value per key and refuses instead of dropping one.
func TestSameKeyTaints(t *testing.T) {
	in := fullInput(t)
	in.NodeTaints = []corev1.Taint{
		{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute},
		{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule},
	}
	data, err := Render(OSBottlerocket, in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(OSBottlerocket, data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.NodeTaints, in.NodeTaints) {
		t.Errorf("bottlerocket taints = %v, want %v", got.NodeTaints, in.NodeTaints)
	}
	if _, err := Render(OSTalos, in); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("talos with two taints of one key: err = %v, want ErrInvalidInput", err)
	}
}

func TestRenderRejectsBadInput(t *testing.T) {
	cases := map[string]func(*Input){
		"no token":          func(in *Input) { in.Token = "" },
		"malformed token":   func(in *Input) { in.Token = "ABCDEF.0123456789abcdef" },
		"no endpoint":       func(in *Input) { in.Endpoint = "" },
		"endpoint no port":  func(in *Input) { in.Endpoint = "prod.example.com" },
		"endpoint bad port": func(in *Input) { in.Endpoint = "prod.example.com:0" },
		"no CA":             func(in *Input) { in.CACert = nil },
		"CA not PEM":        func(in *Input) { in.CACert = []byte("not a certificate") },
		"no node name":      func(in *Input) { in.NodeName = "" },
		"no version":        func(in *Input) { in.KubernetesVersion = "" },
		"bad version":       func(in *Input) { in.KubernetesVersion = "latest" },
		"bad cluster DNS":   func(in *Input) { in.ClusterDNS = "kube-dns" },
		"bad pod CIDR":      func(in *Input) { in.PodCIDR = "10.244.0.0" },
		"bad taint effect":  func(in *Input) { in.NodeTaints = []corev1.Taint{{Key: "a", Effect: "Never"}} },
	}
	for name, mutate := range cases {
		for _, os := range OSes {
			t.Run(name+"/"+string(os), func(t *testing.T) {
				in := fullInput(t)
				mutate(&in)
				out, err := Render(os, in)
				if !errors.Is(err, ErrInvalidInput) {
					t.Errorf("err = %v, want ErrInvalidInput", err)
				}
				if out != nil {
					t.Errorf("output = %q, want none", out)
				}
			})
		}
	}
	if _, err := Render("windows", fullInput(t)); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("unknown OS: err = %v, want ErrInvalidInput", err)
	}
	in := fullInput(t)
	in.ClusterName = ""
	if _, err := Render(OSBottlerocket, in); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("bottlerocket without cluster name: err = %v, want ErrInvalidInput", err)
	}
}

// TestParseRejects: data that lost its token, endpoint or CA, or is not the format, is an
// error, never a JoinInfo a machine would try to join with.
func TestParseRejects(t *testing.T) {
	in := fullInput(t)
	for _, os := range OSes {
		good, err := Render(os, in)
		if err != nil {
			t.Fatal(err)
		}
		cases := map[string][]byte{
			"empty":   nil,
			"garbage": []byte("\x00\x01 not a config {"),
		}
		switch os {
		case OSFlatcar:
			// The kubeadm files are base64 inside data URLs; drop the unit that runs kubeadm.
			cases["no kubeadm unit"] = []byte(strings.Replace(string(good), `"enabled": true`, `"enabled": false`, 1))
		default:
			cases["no token"] = bytes.ReplaceAll(good, []byte(in.Token), nil)
			cases["no endpoint"] = bytes.ReplaceAll(good, []byte("prod.prod-1a2b3c4d.example.com:6443"), nil)
		}
		if os == OSTalos || os == OSBottlerocket {
			cases["wrong format name"] = good
		}
		for name, data := range cases {
			t.Run(string(os)+"/"+name, func(t *testing.T) {
				parseAs := os
				if name == "wrong format name" {
					parseAs = map[OS]OS{OSTalos: OSBottlerocket, OSBottlerocket: OSTalos}[os]
				}
				got, err := Parse(parseAs, data)
				if err == nil {
					t.Errorf("Parse = %+v, want an error", got)
				}
			})
		}
	}
	if _, err := Parse("windows", []byte("x")); err == nil {
		t.Error("Parse of an unknown format: want an error")
	}
}

func TestCAPin(t *testing.T) {
	got, err := CAPin(testCA(t))
	if err != nil {
		t.Fatal(err)
	}
	if got != caPin {
		t.Errorf("CAPin = %s, want %s (openssl)", got, caPin)
	}
	if _, err := CAPin([]byte("nope")); err == nil {
		t.Error("CAPin of garbage: want an error")
	}
}

// The data of each kubeadm format, rendered for a release, is read by that release's kubeadm:
// a Rocky image of v1.30 has kubeadm 1.30, which knows v1beta3 and not v1beta4.
func TestKubeadmOfTheVersionReadsTheData(t *testing.T) {
	for _, os := range []OS{OSRocky, OSFlatcar, OSKairos} {
		for _, v := range []string{"v1.30.1", "v1.30.2", "v1.31.0", "v1.36.3"} {
			in := fullInput(t)
			in.KubernetesVersion = v
			data, err := Render(os, in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(os, data)
			if err != nil {
				t.Fatalf("%s %s: Parse: %v", os, v, err)
			}
			if err := KubeadmReads(v, got.KubeadmAPIVersion); err != nil {
				t.Errorf("%s %s: %v", os, v, err)
			}
		}
	}
	for _, c := range []struct {
		version, api string
		ok           bool
	}{
		{"v1.30.2", kubeadmV1beta3, true},
		{"v1.30.2", kubeadmV1beta4, false},
		{"v1.31.0-rc.1", kubeadmV1beta4, true},
		{"v1.21.14", kubeadmV1beta3, false},
		{"v1.36.3", "kubeadm.k8s.io/v1beta2", false},
		{"not-a-version", kubeadmV1beta3, false},
	} {
		if err := KubeadmReads(c.version, c.api); (err == nil) != c.ok {
			t.Errorf("KubeadmReads(%s, %s) = %v, want ok %v", c.version, c.api, err, c.ok)
		}
	}
}
