// Command coredns is CoreDNS (github.com/coredns/coredns, from the module proxy) with only the
// plugins a tenant's cluster DNS uses, the Corefile of hack/build-node-images.sh's image: the
// cluster domain from the Kubernetes API, the rest forwarded, and what kubeadm's CoreDNS
// configuration has besides. Fewer plugins than upstream's binary: fewer modules to fetch and a
// smaller image, the same code for what it serves.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins, registered by their init functions.
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// directives is the order the plugins run in: upstream's order (core/dnsserver/zdirectives.go)
// restricted to the plugins above.
var directives = []string{"reload", "health", "ready", "errors", "log", "cache", "loadbalance", "loop", "kubernetes", "forward"}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
