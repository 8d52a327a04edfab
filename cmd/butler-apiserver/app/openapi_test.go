package app

import (
	"testing"

	"k8s.io/kube-openapi/pkg/validation/spec"

	generatedopenapi "github.com/butlerdotdev/butler-apiserver/pkg/generated/openapi"
)

// TestOpenAPIDefinitionsComplete: every type a definition refers to has a definition of its own.
// The server builds its models from them at start and refuses to start otherwise ("cannot find
// model definition"), which only the plane's tests would see: an API type of a package the
// generator is not given (intstr.IntOrString) fails here instead.
func TestOpenAPIDefinitionsComplete(t *testing.T) {
	defs := generatedopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref { return spec.MustCreateRef(name) })
	for name, def := range defs {
		for _, dep := range def.Dependencies {
			if _, ok := defs[dep]; !ok {
				t.Errorf("%s refers to %s, which has no OpenAPI definition (hack/update-codegen.sh's --extra-pkgs)", name, dep)
			}
		}
	}
}
