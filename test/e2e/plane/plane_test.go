// Package plane drives the local management plane that its TestMain brings up once
// (cmd/butler-localplane through framework.Run: etcd, a real kube-apiserver and
// kube-controller-manager, butler-apiserver behind an APIService), through the management
// cluster's endpoint only, with real kubectl and the generated clientset. The real worker nodes
// and the fault battery are test/e2e/nodes', on a plane of their own.
//
// A test that spends most of its time waiting on its own clusters (a timer, a cron minute, a
// rollout) calls framework.LongestFirst (t.Parallel, ordered): Go runs those after the serial
// tests, four at once, the longest first (framework/order.go), which keeps the suite inside CI's
// budget. A test that kills or restarts the plane's processes, counts across namespaces, or
// measures a duration it asserts stays serial.
package plane

import (
	"fmt"
	"os"
	"testing"

	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

func TestMain(m *testing.M) {
	os.Exit(framework.Run(m))
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
