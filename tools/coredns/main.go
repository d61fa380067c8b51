// Command coredns runs CoreDNS with only the plugins a Kubernetes cluster DNS
// needs. Plugins register themselves when imported (see CoreDNS's
// core/plugin/zplugin.go); the order they run in comes from
// core/dnsserver's directive list, whatever the import order here. There is
// deliberately no forward (nor loop, which exists to catch forwarding loops):
// names outside the cluster zones get no answer from upstream, so a Corefile
// must not use forward, loop or prometheus.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
