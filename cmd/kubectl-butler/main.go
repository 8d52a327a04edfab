// Command kubectl-butler is the kubectl plugin for butler: on PATH it makes `kubectl butler`
// mint kubeconfigs, hibernate and wake, snapshot and restore, rotate credentials and describe a
// TenantCluster as a tree.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/butlerdotdev/butler-apiserver/pkg/kubectlbutler"
)

func main() {
	cmd := kubectlbutler.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
