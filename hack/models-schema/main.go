// Command models-schema prints the generated OpenAPI definitions as one OpenAPI v2 document;
// applyconfiguration-gen reads it to know each type's list and map semantics.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/butlerdotdev/butler-apiserver/pkg/generated/openapi"
)

func main() {
	refFunc := func(name string) spec.Ref {
		return spec.MustCreateRef("#/definitions/" + name)
	}
	defs := openapi.GetOpenAPIDefinitions(refFunc)
	schemas := make(map[string]spec.Schema, len(defs))
	for name, def := range defs {
		// Prefer an embedded v2 schema so the output is always OpenAPI v2.
		if v2, ok := def.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
			schemas[name] = v2
			continue
		}
		schemas[name] = def.Schema
	}
	out, err := json.Marshal(&spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "butler", Version: "unversioned"}},
		Definitions: schemas,
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_, _ = os.Stdout.Write(out)
}
