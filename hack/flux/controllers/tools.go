//go:build tools

// The controllers' main packages, which hack/build-flux-images.sh builds; imported here only so
// that go mod tidy keeps their requirements in go.sum.
package tools

import (
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/source-controller"
)
