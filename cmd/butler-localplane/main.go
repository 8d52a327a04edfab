// Command butler-localplane runs the local management plane (`make run`, and the tests through
// test/localplane): etcd, kube-apiserver, kube-controller-manager, the Cluster API manager,
// butler-apiserver behind an APIService and butler-localprovider, on loopback, with its state in
// LOCAL_DIR. Run from the repository's root; configured by the environment (--help lists it).
// SIGINT or SIGTERM stops everything in order; it exits 128 plus the signal's number then, and 1
// when the plane failed to start or one of its processes stayed gone.
package main

import (
	"github.com/butlerdotdev/butler-apiserver/pkg/localplane"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

const usage = `Usage: butler-localplane (run from the repository's root)

The local management plane on loopback. Environment (all optional):
  LOCAL_DIR                     state, certificates, logs, kubeconfigs (default _output/local)
  ETCD_PORT ETCD_PEER_PORT KUBE_APISERVER_PORT KUBE_CONTROLLER_MANAGER_PORT BUTLER_APISERVER_PORT
                                loopback ports (default: free ones outside the kernel's ephemeral
                                range, picked again if another process binds one first; a port
                                given here is not: its component fails, and the plane stops).
                                The ports chosen are in LOCAL_DIR/plane.env while the plane runs.
  BIN                           where the binaries are (default _output/bin; built when missing)
  BUTLER_APISERVER_ARGS         extra flags for butler-apiserver
  BUTLER_LOCALPROVIDER_ARGS     extra flags for butler-localprovider
  BUTLER_APISERVER_REPLICAS     how many butler-apiserver replicas (default 1); the APIService
                                reaches the first, the others stand by for the controllers' Lease
  RESTART_GRACE                 seconds a process may be gone (restarted by hand or by a test)
                                before the plane stops (default 3)
  TENANT_PORT_RANGE             loopback ports of the tenants' kube-apiservers (default 30000-32000)
  KUBE_VERSIONS_DIR             where other Kubernetes versions are built (default _output/kube-versions)
  NODE_IMAGES_DIR               the images real nodes import (default _output/node-images)
  KUBE_CONTROLLER_MANAGER_QPS   requests/s of each of kube-controller-manager's controllers
                                (default 300, burst twice that)
`

func main() { process.Main("localplane", usage, localplane.FromEnv, localplane.Run) }
