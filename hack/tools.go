//go:build tools

// Package hack pins the code generators in go.mod, so hack/update-codegen.sh runs the same versions everywhere.
package hack

import (
	// goimports is run by go-to-protobuf on the generated.pb.go files it writes.
	_ "golang.org/x/tools/cmd/goimports"
	_ "k8s.io/code-generator"
	_ "k8s.io/code-generator/cmd/go-to-protobuf"
	_ "k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo"
)
