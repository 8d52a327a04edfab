package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubebuild"
)

// buildKube is `butler-localprovider build-kube [--kube-versions-dir DIR] VERSION...`: it builds
// the Kubernetes versions a tenant would otherwise wait for on first use.
func buildKube(args []string) {
	flags := flag.NewFlagSet(kubebuild.BuildCommand, flag.ExitOnError)
	dir := flags.String("kube-versions-dir", "_output/kube-versions", "where the versions are built, one directory each")
	_ = flags.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := kubebuild.BuildVersions(ctx, *dir, flags.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "butler-localprovider %s: %v\n", kubebuild.BuildCommand, err)
		os.Exit(1)
	}
}
