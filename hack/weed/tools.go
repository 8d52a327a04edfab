//go:build tools

// Package weed pins the SeaweedFS server built by hack/build-weed.sh.
package weed

import (
	_ "github.com/seaweedfs/seaweedfs/weed"
)
