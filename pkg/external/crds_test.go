package external_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/crdtest"
)

func load(t *testing.T) *crdtest.Set {
	t.Helper()
	dir, err := crdtest.Dir()
	if err != nil {
		t.Fatal(err)
	}
	set, err := crdtest.Load(dir)
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	return set
}

// Every file is one CRD that kube-apiserver accepts (crdtest.Load runs its create validation,
// structural schema included), named <group>_<plural>.yaml, with one served storage version and
// no conversion webhook (none runs in our management plane); ours have a status subresource.
func TestCRDFiles(t *testing.T) {
	set := load(t)
	if len(set.Files) < 40 {
		t.Fatalf("%d CRD files, want at least 40", len(set.Files))
	}
	for _, f := range set.Files {
		crd := f.CRD
		if want := crd.Spec.Group + "_" + crd.Spec.Names.Plural + ".yaml"; filepath.Base(f.Path) != want {
			t.Errorf("%s: file name, want %s", filepath.Base(f.Path), want)
		}
		if crd.Name != crd.Spec.Names.Plural+"."+crd.Spec.Group {
			t.Errorf("%s: metadata.name %q", filepath.Base(f.Path), crd.Name)
		}
		storage := 0
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				storage++
				if !v.Served {
					t.Errorf("%s: storage version %s not served", crd.Name, v.Name)
				}
			}
			if crd.Labels["app.kubernetes.io/part-of"] == "butler" && (v.Subresources == nil || v.Subresources.Status == nil) {
				t.Errorf("%s %s: no status subresource", crd.Name, v.Name)
			}
		}
		if storage != 1 {
			t.Errorf("%s: %d storage versions", crd.Name, storage)
		}
		if len(crd.Spec.Versions) > 1 {
			t.Errorf("%s: %d versions; we keep only the storage version", crd.Name, len(crd.Spec.Versions))
		}
		if c := crd.Spec.Conversion; c != nil && c.Strategy != apiextensionsv1.NoneConverter {
			t.Errorf("%s: conversion strategy %s", crd.Name, c.Strategy)
		}
	}
}

// Every external kind the controllers use has its CRD here, at the version and resource we use.
func TestKindsHaveCRDs(t *testing.T) {
	set := load(t)
	for _, k := range external.Kinds {
		if k.GVK.Group == external.KamajiGroup {
			continue // Kamaji's own TenantControlPlane: created by Kamaji where it runs, never by us.
		}
		crd := set.CRD(k.GVK.GroupKind())
		if crd == nil {
			t.Errorf("%s: no CRD in artifacts/crds", k.GVK)
			continue
		}
		if crd.Spec.Names.Plural != k.Resource {
			t.Errorf("%s: resource %s, CRD plural %s", k.GVK, k.Resource, crd.Spec.Names.Plural)
		}
		if !slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return v.Name == k.GVK.Version && v.Served
		}) {
			t.Errorf("%s: version not served by its CRD", k.GVK)
		}
	}
	if external.ClusterGVK.GroupVersion() != clusterv1.GroupVersion {
		t.Errorf("ClusterGVK %s, CAPI's types are %s", external.ClusterGVK, clusterv1.GroupVersion)
	}
}

// CAPI finds the contract of a referenced kind from its CRD's label cluster.x-k8s.io/<contract>:
// <versions> (internal/contract.GetLatestContractAndAPIVersionFromContract); v1.14 accepts v1beta2
// and v1beta1. The label must name served versions, its latest must be the one we write, and the
// status fields of that contract must exist in the schema (or CAPI reads fields the apiserver
// prunes).
func TestContractLabels(t *testing.T) {
	set := load(t)
	for _, k := range external.Kinds {
		if !k.CAPIReferenced {
			continue
		}
		crd := set.CRD(k.GVK.GroupKind())
		if crd == nil {
			t.Errorf("%s: no CRD", k.GVK)
			continue
		}
		contract, versions := "", ""
		for _, c := range []string{"v1beta2", "v1beta1"} {
			if v := crd.Labels["cluster.x-k8s.io/"+c]; v != "" {
				contract, versions = c, v
				break
			}
		}
		if contract == "" {
			t.Errorf("%s: no contract label cluster.x-k8s.io/v1beta2 or v1beta1", crd.Name)
			continue
		}
		listed := strings.Split(versions, "_")
		for _, v := range listed {
			if !slices.ContainsFunc(crd.Spec.Versions, func(cv apiextensionsv1.CustomResourceDefinitionVersion) bool {
				return cv.Name == v && cv.Served
			}) {
				t.Errorf("%s: contract label lists %s, not served", crd.Name, v)
			}
		}
		if listed[len(listed)-1] != k.GVK.Version {
			t.Errorf("%s: CAPI would use %s, we write %s", crd.Name, listed[len(listed)-1], k.GVK.Version)
		}
		if (k.GVK.Group == external.BootstrapGroup || k.GVK.Group == external.LocalInfrastructureGroup) && contract != "v1beta2" {
			t.Errorf("%s: ours implement the v1beta2 contract, label says %s", crd.Name, contract)
		}
		if field := contractStatusField(k.GVK.Kind, contract); field != nil && !hasPath(crd, k.GVK.Version, append([]string{"status"}, field...)) {
			t.Errorf("%s: contract %s, but its schema has no status.%s", crd.Name, contract, strings.Join(field, "."))
		}
	}
}

// contractStatusField is the status field CAPI reads first from a kind under a contract.
func contractStatusField(kind, contract string) []string {
	switch {
	case strings.HasSuffix(kind, "Template"):
		return nil
	case strings.HasSuffix(kind, "ControlPlane"):
		if contract == "v1beta1" {
			return []string{"initialized"}
		}
		return []string{"initialization", "controlPlaneInitialized"}
	case strings.HasPrefix(kind, "BootstrapConfig"), strings.HasPrefix(kind, "KubeadmConfig"):
		if contract == "v1beta1" {
			return []string{"ready"}
		}
		return []string{"initialization", "dataSecretCreated"}
	default: // infrastructure clusters and machines
		if contract == "v1beta1" {
			return []string{"ready"}
		}
		return []string{"initialization", "provisioned"}
	}
}

func hasPath(crd *apiextensionsv1.CustomResourceDefinition, version string, path []string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		s := v.Schema.OpenAPIV3Schema
		for _, p := range path {
			next, ok := s.Properties[p]
			if !ok {
				return false
			}
			s = &next
		}
		return true
	}
	return false
}

// The printer columns a user sees with kubectl get.
func TestPrinterColumns(t *testing.T) {
	set := load(t)
	for gk, want := range map[string][]string{
		"BootstrapConfig": {"OS", "PHASE", "SECRET", "AGE"},
		"LocalMachine":    {"PROVIDERID", "NODE", "PHASE", "AGE"},
	} {
		var crd *apiextensionsv1.CustomResourceDefinition
		for _, f := range set.Files {
			if f.CRD.Spec.Names.Kind == gk {
				crd = f.CRD
			}
		}
		if crd == nil {
			t.Fatalf("no CRD of kind %s", gk)
		}
		var got []string
		for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
			got = append(got, c.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s columns %v, want %v", gk, got, want)
		}
	}
}
