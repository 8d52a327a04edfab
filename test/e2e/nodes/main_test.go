// Package nodes runs real worker nodes on this machine (LocalMachine spec.nodeType real, as
// root), Flux syncing a tenant on them from a Git server, and the fault battery, all on one
// management plane that its TestMain brings up (framework.Run): CI's stage make
// test-realnode-faults runs them together on a plane of two butler-apiserver replicas.
//
// The fault tests run first, one after the other: they are the package's sequential tests, and
// Go starts the parallel ones (the real-node tests and TestGitOpsTenant, by realNodeParallel)
// only when every sequential test has ended; among the sequential tests Go keeps the order of
// the files, and faults_test.go sorts before gitops_*.go and realnode_*.go. Each fault test
// restarts what it killed and the last deletes its clusters, so the nodes start on a whole plane.
package nodes

import (
	"os"
	"strings"
	"testing"

	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

func TestMain(m *testing.M) {
	var env []string
	if os.Getenv("BUTLER_E2E_REALNODE") != "" {
		// TestGitOpsTenant's Git server is at an internal address, and so is the address where
		// nothing answers: the fetch policy's exception for tests, never a user's.
		env = append(env, "BUTLER_APISERVER_ARGS="+strings.TrimSpace(os.Getenv("BUTLER_APISERVER_ARGS")+
			" --fetch-allowed-internal="+gitOpsServerAddr+","+gitOpsNobodyAddr))
	}
	os.Exit(framework.Run(m, env...))
}
