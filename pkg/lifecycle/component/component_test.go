package component_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/crdtest"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/capi"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/componenttest"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/workers"
)

// variant is one way a cluster is set up.
type variant struct {
	name   string
	change func(in *component.Input)
}

var variants = []variant{
	{"steward-loadbalancer", func(*component.Input) {}},
	{"steward-ingress", func(in *component.Input) { in.Cluster.Spec.ControlPlane.ServiceType = v1alpha1.ExposureIngress }},
	{"steward-gateway", func(in *component.Input) { in.Config.Spec.ControlPlaneExposure.Mode = v1alpha1.ExposureGateway }},
	{"kamaji-loadbalancer", func(in *component.Input) {
		in.Config.Spec.ControlPlaneProvider = v1alpha1.ControlPlaneProviderKamaji
	}},
	{"kamaji-ingress", func(in *component.Input) {
		in.Config.Spec.ControlPlaneProvider = v1alpha1.ControlPlaneProviderKamaji
		in.Config.Spec.ControlPlaneExposure.Mode = v1alpha1.ExposureIngress
	}},
	{"kamaji-gateway", func(in *component.Input) {
		in.Config.Spec.ControlPlaneProvider = v1alpha1.ControlPlaneProviderKamaji
		in.Cluster.Spec.ControlPlane.ServiceType = v1alpha1.ExposureGateway
	}},
	{"steward-autorepair", func(in *component.Input) {
		in.Cluster.Spec.Workers.AutoRepair = &v1alpha1.AutoRepair{Enabled: true}
	}},
	{"standalone", func(in *component.Input) {
		in.Cluster.Spec.ControlPlane.Type = v1alpha1.ControlPlaneStandalone
		in.Cluster.Spec.ControlPlane.Replicas = ptrTo[int32](3)
		in.Cluster.Spec.ControlPlane.MachineTemplate = &v1alpha1.MachineTemplate{
			CPU: ptrTo[int32](2), Memory: componenttest.Quantity("8Gi"), DiskSize: componenttest.Quantity("50Gi"),
		}
	}},
}

func ptrTo[T any](v T) *T { return &v }

// build is every object the TenantCluster controller applies for an input.
func build(t *testing.T, in component.Input) map[string]*unstructured.Unstructured {
	t.Helper()
	objs := map[string]*unstructured.Unstructured{}
	add := func(name string, o *unstructured.Unstructured, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		objs[name] = o
	}
	c, err := capi.Cluster(in)
	add("cluster", c, err)
	cp, err := capi.ControlPlane(in)
	add("controlplane", cp, err)
	ic, wt, err := infra.ForProvider(in)
	add("infracluster", ic, err)
	add("workertemplate", wt, nil)
	if in.Cluster.Spec.ControlPlane.Type == v1alpha1.ControlPlaneStandalone {
		ct, err := infra.ControlPlaneTemplate(in)
		add("controlplanetemplate", ct, err)
	}
	md, err := workers.MachineDeployment(in)
	add("machinedeployment", md, err)
	if mhc, err := workers.MachineHealthCheck(in); mhc != nil || err != nil {
		add("machinehealthcheck", mhc, err)
	}
	bt, err := workers.BootstrapTemplate(in)
	add("bootstraptemplate", bt, err)
	return objs
}

// Every object built for each of the seven providers, in every control plane variant, is one
// kube-apiserver accepts under the CRDs of artifacts/crds, with no field it would drop, and is
// ready for server-side apply: name, namespace and the contract labels, a spec, no status. The
// provider-independent objects and the infrastructure objects are compared with golden files.
func TestEveryObjectValidatesAgainstItsCRD(t *testing.T) {
	crds := loadCRDs(t)
	validated := 0
	for _, p := range componenttest.Providers {
		for _, v := range variants {
			t.Run(fmt.Sprintf("%s/%s", p, v.name), func(t *testing.T) {
				in := componenttest.Input(p)
				v.change(&in)
				objs := build(t, in)
				for _, name := range slices.Sorted(maps.Keys(objs)) {
					o := objs[name]
					if errs := crds.Validate(o); len(errs) > 0 {
						t.Errorf("%s %s: rejected by its CRD: %v", o.GetKind(), o.GetName(), errs.ToAggregate())
					}
					validated++
					checkApplyReady(t, in, o)
					switch {
					case name == "infracluster" || name == "workertemplate":
						if v.name == "steward-loadbalancer" {
							componenttest.Golden(t, fmt.Sprintf("%s-%s", p, name), o.Object)
						}
					case name == "controlplanetemplate":
						componenttest.Golden(t, fmt.Sprintf("%s-%s", p, name), o.Object)
					case v.name == "steward-autorepair" && name != "machinehealthcheck":
						// The same as steward-loadbalancer's but for the health check.
					case p == v1alpha1.ProviderLocal:
						componenttest.Golden(t, fmt.Sprintf("%s-%s", v.name, name), o.Object)
					}
				}
			})
		}
	}
	t.Logf("%d objects validated against their CRDs", validated)
}

// loadCRDs is every CRD of artifacts/crds, to validate objects against.
func loadCRDs(t *testing.T) *crdtest.Set {
	t.Helper()
	dir, err := crdtest.Dir()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := crdtest.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return crds
}

func checkApplyReady(t *testing.T, in component.Input, o *unstructured.Unstructured) {
	t.Helper()
	if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
		t.Errorf("%v: apiVersion, kind and name are needed for apply", o.Object)
	}
	if o.GetNamespace() != componenttest.Namespace {
		t.Errorf("%s %s: namespace %q, want the tenant namespace", o.GetKind(), o.GetName(), o.GetNamespace())
	}
	if !maps.Equal(o.GetLabels(), component.Labels(in)) {
		t.Errorf("%s %s: labels %v, want %v", o.GetKind(), o.GetName(), o.GetLabels(), component.Labels(in))
	}
	if _, ok := o.Object["status"]; ok {
		t.Errorf("%s %s: carries a status", o.GetKind(), o.GetName())
	}
	meta, _ := o.Object["metadata"].(map[string]any)
	for k := range meta {
		if !slices.Contains([]string{"name", "namespace", "labels", "annotations"}, k) {
			t.Errorf("%s %s: metadata.%s would be applied", o.GetKind(), o.GetName(), k)
		}
	}
	if _, ok := o.Object["spec"]; !ok && o.GetKind() != "LocalCluster" {
		t.Errorf("%s %s: no spec", o.GetKind(), o.GetName())
	}
}

func TestNthAddress(t *testing.T) {
	for _, tc := range []struct {
		cidr string
		n    int
		want string
		err  bool
	}{
		{"10.96.0.0/12", 10, "10.96.0.10", false},
		{"10.96.5.7/12", 10, "10.96.0.10", false},
		{"172.20.0.0/16", 10, "172.20.0.10", false},
		{"fd00:10:96::/108", 10, "fd00:10:96::a", false},
		{"10.0.0.0/29", 10, "", true},
		{"not-a-cidr", 10, "", true},
	} {
		got, err := component.NthAddress(tc.cidr, tc.n)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("NthAddress(%s, %d) = %q, %v; want %q, error %v", tc.cidr, tc.n, got, err, tc.want, tc.err)
		}
	}
}

func TestPrune(t *testing.T) {
	in := map[string]any{
		"a": nil, "b": map[string]any{}, "c": []any{}, "d": int64(0), "e": false, "f": "",
		"g": map[string]any{"h": map[string]any{"i": nil}}, "j": []any{map[string]any{}, "x"},
	}
	got := component.Prune(in)
	want := map[string]any{"d": int64(0), "e": false, "f": "", "j": []any{"x"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Prune = %v, want %v", got, want)
	}
}

func TestControlPlaneProvider(t *testing.T) {
	for _, tc := range []struct {
		cfg  *v1alpha1.ButlerConfig
		want v1alpha1.ControlPlaneProvider
	}{
		{nil, v1alpha1.ControlPlaneProviderSteward},
		{&v1alpha1.ButlerConfig{}, v1alpha1.ControlPlaneProviderSteward},
		{&v1alpha1.ButlerConfig{Spec: v1alpha1.ButlerConfigSpec{ControlPlaneProvider: "kamaji"}}, v1alpha1.ControlPlaneProviderKamaji},
		{&v1alpha1.ButlerConfig{Spec: v1alpha1.ButlerConfigSpec{ControlPlaneProvider: "other"}}, v1alpha1.ControlPlaneProviderSteward},
	} {
		if got := component.ControlPlaneProvider(tc.cfg); got != tc.want {
			t.Errorf("ControlPlaneProvider(%v) = %s, want %s", tc.cfg, got, tc.want)
		}
	}
}

// TestWorkerTemplatePerOS: for every OS on every provider, the workers' machine template either
// carries what that provider needs to hand the OS its bootstrap data (checked against the
// provider's CRD and a golden file per pair), or the pair is refused with the reason the
// admission plugin gives. On AWS it follows CAPA's rules: Ignition data needs spec.ignition
// with the data's Ignition version, never beside cloudInit (CAPA's webhook forbids it); data
// that the OS reads itself must not go through Secrets Manager, whose boothook only cloud-init
// runs.
func TestWorkerTemplatePerOS(t *testing.T) {
	crds := loadCRDs(t)
	oses := []v1alpha1.OSType{v1alpha1.OSTalos, v1alpha1.OSRocky, v1alpha1.OSFlatcar, v1alpha1.OSBottlerocket, v1alpha1.OSKairos}
	for _, p := range componenttest.Providers {
		for _, os := range oses {
			t.Run(fmt.Sprintf("%s/%s", p, os), func(t *testing.T) {
				in := componenttest.Input(p)
				in.Cluster.Spec.Workers.MachineTemplate.OS.Type = os
				_, wt, err := infra.ForProvider(in)
				if why := validation.OSUnsupportedOn(butler.ProviderType(p), butler.OSType(os)); why != "" {
					if err == nil || !strings.Contains(err.Error(), why) {
						t.Fatalf("error %v, want the refusal %q", err, why)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if errs := crds.Validate(wt); len(errs) > 0 {
					t.Fatalf("%s: rejected by its CRD: %v", wt.GetKind(), errs.ToAggregate())
				}
				componenttest.Golden(t, fmt.Sprintf("os/%s-%s-workertemplate", p, os), wt.Object)
				if p != v1alpha1.ProviderAWS {
					return
				}
				spec, _, _ := unstructured.NestedMap(wt.Object, "spec", "template", "spec")
				_, ignition := spec["ignition"]
				skip, _, _ := unstructured.NestedBool(spec, "cloudInit", "insecureSkipSecretsManager")
				_, cloudInit := spec["cloudInit"]
				switch os {
				case v1alpha1.OSFlatcar:
					v, _, _ := unstructured.NestedString(spec, "ignition", "version")
					if !ignition || cloudInit || v != "3.4" {
						t.Errorf("flatcar on AWS: ignition %v (version %q), cloudInit %v; want ignition 3.4 alone", ignition, v, cloudInit)
					}
				case v1alpha1.OSRocky:
					if ignition || skip {
						t.Errorf("rocky on AWS: ignition %v, Secrets Manager skipped %v; want cloud-init through Secrets Manager", ignition, skip)
					}
				default:
					if ignition || !skip {
						t.Errorf("%s on AWS: ignition %v, Secrets Manager skipped %v; want plain user data", os, ignition, skip)
					}
				}
			})
		}
	}
}
