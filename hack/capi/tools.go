//go:build tools

// Package capi pins the Cluster API managers built by hack/build-capi.sh.
package capi

import (
	_ "sigs.k8s.io/cluster-api/core"
)
