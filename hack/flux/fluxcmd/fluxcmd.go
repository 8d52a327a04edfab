// Package fluxcmd is what hack/flux/manifests and hack/flux/chart share: flux2's version (the
// manifests' source, the chart's version), taken by both as --flux-version, and how they end.
package fluxcmd

import (
	"flag"
	"fmt"
	"os"
)

// DefaultFluxVersion is the flux2 release whose manifests and pins are used.
const DefaultFluxVersion = "v2.9.5"

// FluxVersion defines the --flux-version flag.
func FluxVersion() *string {
	return flag.String("flux-version", DefaultFluxVersion, "version of github.com/fluxcd/flux2/v2 whose manifests and pins are used")
}

// Main parses the command line, runs run, and ends the command with its error, named by name.
func Main(name string, run func() error) {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
