// Package steward holds the checks the Steward stage of hack/test-cluster.sh (make
// test-steward) runs in Go against the real Steward: what a shell and etcd's HTTP gateway
// cannot do, such as speaking to Steward's DataStore as one tenant's etcd user.
package steward
