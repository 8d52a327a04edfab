//go:build tools

// The controller's main package, which hack/build-flux-images.sh builds; imported here only so
// that go mod tidy keeps its requirements in go.sum.
package tools

import _ "github.com/fluxcd/kustomize-controller"
