package workers_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/componenttest"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/workers"
)

func get(u *unstructured.Unstructured, path ...string) string {
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !ok {
		return "<none>"
	}
	return fmt.Sprint(v)
}

// The MachineDeployment reads back as a CAPI v1beta2 MachineDeployment whose selector selects
// its own machines, at the cluster's version and size, referring to the bootstrap template and
// the provider's machine template.
func TestMachineDeployment(t *testing.T) {
	for _, p := range componenttest.Providers {
		for _, replicas := range []int32{0, 3, 50} {
			in := componenttest.Input(p)
			in.Cluster.Spec.Workers.Replicas = replicas
			u, err := workers.MachineDeployment(in)
			if err != nil {
				t.Fatal(err)
			}
			md := &clusterv1.MachineDeployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, md); err != nil {
				t.Fatal(err)
			}
			sel, err := metav1.LabelSelectorAsSelector(&md.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(md.Spec.Template.Labels)) {
				t.Errorf("%s: selector %v does not select the template labels %v", p, md.Spec.Selector, md.Spec.Template.Labels)
			}
			_, tmpl := infra.Kinds(p)
			s := md.Spec.Template.Spec
			if md.Name != "prod-workers" || md.Spec.ClusterName != "prod" || s.ClusterName != "prod" ||
				md.Spec.Replicas == nil || *md.Spec.Replicas != replicas || s.Version != "v1.36.3" ||
				s.Bootstrap.ConfigRef != (clusterv1.ContractVersionedObjectReference{APIGroup: "bootstrap.butlerlabs.dev", Kind: "BootstrapConfigTemplate", Name: "prod-workers"}) ||
				s.InfrastructureRef != (clusterv1.ContractVersionedObjectReference{APIGroup: tmpl.Group, Kind: tmpl.Kind, Name: "prod-workers"}) ||
				md.Spec.Template.Labels["butler.butlerlabs.dev/pool"] != "workers" {
				t.Errorf("%s, %d replicas: %+v", p, replicas, md.Spec)
			}
			if rs := md.Spec.Rollout.Strategy; rs.Type != clusterv1.RollingUpdateMachineDeploymentStrategyType ||
				rs.RollingUpdate.MaxSurge.IntValue() != 1 || rs.RollingUpdate.MaxUnavailable == nil || rs.RollingUpdate.MaxUnavailable.IntValue() != 0 {
				t.Errorf("%s: rollout %+v", p, rs)
			}
			// Zero replicas is a real request (scale to zero), not a field to drop.
			if get(u, "spec", "replicas") != fmt.Sprint(replicas) {
				t.Errorf("%s: spec.replicas %s, want %d", p, get(u, "spec", "replicas"), replicas)
			}
		}
	}
	in := componenttest.Input("vsphere")
	if _, err := workers.MachineDeployment(in); err == nil || !strings.Contains(err.Error(), `unknown provider "vsphere"`) {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestBootstrapTemplate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(tc *v1alpha1.TenantCluster)
		want   map[string]string
		err    string
	}{
		{"defaults", func(*v1alpha1.TenantCluster) {}, map[string]string{
			"os.type": "talos", "os.version": "<none>", "clusterDNS": "10.96.0.10", "clusterDomain": "cluster.local",
			"podCIDR": "10.244.0.0/16", "serviceCIDR": "10.96.0.0/12",
			"nodeLabels": "map[butler.butlerlabs.dev/pool:workers butler.butlerlabs.dev/tenant-cluster:prod]",
			"tokenTTL":   "<none>",
		}, ""},
		{"rocky 9.6 on other networks", func(tc *v1alpha1.TenantCluster) {
			tc.Spec.Workers.MachineTemplate.OS = v1alpha1.OSSpec{Type: v1alpha1.OSRocky, Version: "9.6"}
			tc.Spec.Networking = v1alpha1.NetworkingSpec{PodCIDR: "172.16.0.0/16", ServiceCIDR: "172.20.0.0/16"}
		}, map[string]string{"os.type": "rocky", "os.version": "9.6", "clusterDNS": "172.20.0.10", "podCIDR": "172.16.0.0/16", "serviceCIDR": "172.20.0.0/16"}, ""},
		{"each OS", func(tc *v1alpha1.TenantCluster) { tc.Spec.Workers.MachineTemplate.OS.Type = v1alpha1.OSBottlerocket },
			map[string]string{"os.type": "bottlerocket"}, ""},
		{"bad service CIDR", func(tc *v1alpha1.TenantCluster) { tc.Spec.Networking.ServiceCIDR = "10.96.0.0" }, nil, "spec.networking.serviceCIDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := componenttest.Input(v1alpha1.ProviderLocal)
			tc.change(in.Cluster)
			u, err := workers.BootstrapTemplate(in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.GetKind() != "BootstrapConfigTemplate" || u.GetAPIVersion() != "bootstrap.butlerlabs.dev/v1alpha1" || u.GetName() != "prod-workers" {
				t.Errorf("%s %s %s", u.GetAPIVersion(), u.GetKind(), u.GetName())
			}
			for path, want := range tc.want {
				if got := get(u, append([]string{"spec", "template", "spec"}, strings.Split(path, ".")...)...); got != want {
					t.Errorf("spec.template.spec.%s = %s, want %s", path, got, want)
				}
			}
		})
	}
}
