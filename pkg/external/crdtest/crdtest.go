// Package crdtest loads the CRDs in artifacts/crds and validates objects against them as
// kube-apiserver would on create: unknown fields (which it would prune silently, so here they are
// errors), defaulting, the OpenAPI schema and the CEL rules. Only tests import it.
package crdtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// File is one CRD file.
type File struct {
	Path string
	CRD  *apiextensionsv1.CustomResourceDefinition
}

type version struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// Set is every CRD of a directory.
type Set struct {
	Files    []File
	versions map[schema.GroupVersionKind]*version
}

var scheme = runtime.NewScheme()

func init() { apiextensionsinstall.Install(scheme) }

// Dir is artifacts/crds of the repository that holds the working directory.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "artifacts", "crds"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("crdtest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Load parses every *.yaml in dir, validates each CRD as kube-apiserver does on create, and
// prepares the schema of every served version.
func Load(dir string) (*Set, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	set := &Set{versions: map[schema.GroupVersionKind]*version{}}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(stripDocumentMarker(data), crd); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		if err := set.add(crd); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		set.Files = append(set.Files, File{Path: path, CRD: crd})
	}
	return set, nil
}

// FromManifests is the CRDs of a stream of YAML documents (a generated install manifest, such as
// the Flux manifests a tenant gets), each validated and prepared as Load does; other kinds are
// skipped.
func FromManifests(name string, data []byte) (*Set, error) {
	set := &Set{versions: map[schema.GroupVersionKind]*version{}}
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		var kind struct{ Kind string }
		if err := yaml.Unmarshal(doc, &kind); err != nil {
			return nil, fmt.Errorf("%s document %d: %w", name, i, err)
		}
		if kind.Kind != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("%s document %d: %w", name, i, err)
		}
		if err := set.add(crd); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, crd.Name, err)
		}
		set.Files = append(set.Files, File{Path: name, CRD: crd})
	}
	return set, nil
}

// stripDocumentMarker allows the single leading "---" our files carry (one CRD per file).
func stripDocumentMarker(data []byte) []byte {
	lines := bytes.SplitN(data, []byte("\n"), -1)
	var out [][]byte
	seen := false
	for _, l := range lines {
		if !seen && bytes.Equal(bytes.TrimSpace(l), []byte("---")) {
			seen = true
			continue
		}
		out = append(out, l)
	}
	return bytes.Join(out, []byte("\n"))
}

func (s *Set) add(crd *apiextensionsv1.CustomResourceDefinition) error {
	if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" {
		return fmt.Errorf("not an apiextensions.k8s.io/v1 CustomResourceDefinition: %s %s", crd.APIVersion, crd.Kind)
	}
	defaulted := crd.DeepCopy()
	scheme.Default(defaulted)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := scheme.Convert(defaulted, internal, nil); err != nil {
		return err
	}
	// Creation also sets storedVersions; a fresh CRD has the storage version stored.
	for _, v := range internal.Spec.Versions {
		if v.Storage {
			internal.Status.StoredVersions = []string{v.Name}
		}
	}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
		return errs.ToAggregate()
	}
	for _, v := range internal.Spec.Versions {
		if !v.Served {
			continue
		}
		props := internal.Spec.Validation
		if v.Schema != nil {
			props = v.Schema
		}
		if props == nil || props.OpenAPIV3Schema == nil {
			return fmt.Errorf("version %s has no schema", v.Name)
		}
		ss, err := structuralschema.NewStructural(props.OpenAPIV3Schema)
		if err != nil {
			return fmt.Errorf("version %s: %w", v.Name, err)
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(props.OpenAPIV3Schema)
		if err != nil {
			return fmt.Errorf("version %s: %w", v.Name, err)
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		s.versions[gvk] = &version{
			structural: ss,
			validator:  validator,
			cel:        cel.NewValidator(ss, true, celconfig.PerCallLimit),
		}
	}
	return nil
}

// CRD is the CRD of a group and kind, or nil.
func (s *Set) CRD(gk schema.GroupKind) *apiextensionsv1.CustomResourceDefinition {
	for _, f := range s.Files {
		if f.CRD.Spec.Group == gk.Group && f.CRD.Spec.Names.Kind == gk.Kind {
			return f.CRD
		}
	}
	return nil
}

// Validate checks an object as kube-apiserver would on create: a field the schema does not know
// (which the apiserver would drop) is an error, then defaults apply, then the schema and CEL
// rules. The object is not changed.
func (s *Set) Validate(obj *unstructured.Unstructured) field.ErrorList {
	gvk := obj.GroupVersionKind()
	v, ok := s.versions[gvk]
	if !ok {
		return field.ErrorList{field.NotSupported[string](field.NewPath("apiVersion"), gvk.String(), nil)}
	}
	u := runtime.DeepCopyJSON(obj.Object)
	var errs field.ErrorList
	pruned := pruning.PruneWithOptions(u, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, p := range pruned {
		errs = append(errs, field.Invalid(field.NewPath(strings.TrimPrefix(p, ".")), "", "unknown field: the apiserver would drop it"))
	}
	structuraldefaulting.Default(u, v.structural)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u, v.validator)...)
	if v.cel != nil {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, u, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}
