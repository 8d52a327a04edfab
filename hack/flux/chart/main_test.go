package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The chart's CRDs are the seven of the tenant's manifests, out of the templates (Helm never
// deletes crds/), no Namespace is a template, and only kustomize-controller is locked down.
func TestSplitKeepsTheCRDsApartAndLocksKustomizeControllerDown(t *testing.T) {
	stream, err := os.ReadFile("../../../pkg/lifecycle/component/gitops/flux.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crds, templates, err := Split(stream)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(crds), "\nkind: CustomResourceDefinition"); n != 7 {
		t.Errorf("%d CRDs in crds/, want 7", n)
	}
	if strings.Contains(string(templates), "kind: CustomResourceDefinition") || strings.Contains(string(templates), "\nkind: Namespace") {
		t.Error("templates hold a CRD or the Namespace")
	}
	args := map[string][]string{}
	for _, doc := range separator.Split(string(templates), -1) {
		var d struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Name string   `json:"name"`
							Args []string `json:"args"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatal(err)
		}
		if d.Kind == "Deployment" {
			args[d.Metadata.Name] = d.Spec.Template.Spec.Containers[0].Args
		}
	}
	for _, a := range Lockdown {
		if !slices.Contains(args["kustomize-controller"], a) {
			t.Errorf("kustomize-controller's args %v lack %s", args["kustomize-controller"], a)
		}
		if slices.Contains(args["source-controller"], a) {
			t.Errorf("source-controller got %s", a)
		}
	}
	if !slices.Contains(args["kustomize-controller"], "--watch-all-namespaces") {
		t.Errorf("kustomize-controller lost its own args: %v", args["kustomize-controller"])
	}
}

func TestSplitRefusesWhatHelmWouldTemplate(t *testing.T) {
	_, _, err := Split([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: '{{ .Values.x }}'}\n"))
	if err == nil || !strings.Contains(err.Error(), "{{") {
		t.Errorf("got %v", err)
	}
}
