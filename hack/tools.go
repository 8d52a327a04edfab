//go:build tools

// Package hack pins the code generators in go.mod, so hack/update-codegen.sh runs the same versions everywhere.
package hack

import (
	_ "k8s.io/code-generator"
)
