// Package e2e brings up the local management plane once (cmd/butler-localplane: etcd, a real
// kube-apiserver and kube-controller-manager, butler-apiserver behind an APIService) and drives
// it through the management cluster's endpoint only, with real kubectl and the generated clientset.
//
// A test that spends most of its time waiting on its own clusters (a timer, a cron minute, a
// rollout) calls LongestFirst (t.Parallel, ordered): Go runs those after the serial tests, four
// at once, the longest first (order_test.go), which keeps the suite inside CI's budget. A test
// that kills or restarts the plane's processes, counts across namespaces, or measures a duration
// it asserts stays serial.
package e2e

import (
	"fmt"
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

// tenantCluster is a valid TenantCluster manifest, paused: the tests that use it drive the API
// (and write the status the lifecycle controller would), not the lifecycle.
func tenantCluster(namespace, name string) string {
	return fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata:
  name: %s
  namespace: %s
  annotations: {butler.butlerlabs.dev/paused: "true"}
spec:
  kubernetesVersion: v1.31.4
  teamRef:
    name: %[2]s
  providerConfigRef:
    name: harvester
  controlPlane:
    type: hosted
  workers:
    replicas: 3
    machineTemplate:
      cpu: 4
      memory: 16Gi
      diskSize: 100Gi
      os:
        type: talos
  networking:
    podCIDR: 10.244.0.0/16
    serviceCIDR: 10.96.0.0/12
`, name, namespace)
}
