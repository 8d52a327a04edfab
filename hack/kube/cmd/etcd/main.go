// Command etcd is the etcd server the local management plane runs, built at the version
// kube-apiserver is built against.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
