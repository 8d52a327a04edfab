//go:build tools

// Package dist pins the helm CLI that hack/helm.sh builds (the version the main module's
// Helm SDK is).
package dist

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
