package nodeproxy

import (
	"net"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/internal/informer"
)

// target is where a request goes: a pod on this node, or the proxy of the
// node that runs the pod.
type target struct {
	pod  informer.Pod
	peer string // ip:port of the other node's proxy; empty for a local pod
	node string
}

// resolve is the resolve stage: the route comes from the informer caches
// the auth stage already consulted, never from the API server. A
// suspended or not-Ready sandbox answers 503 + Retry-After when
// wake-on-connect is off (with it, awaitReady holds the request first), and
// a request that already hopped never hops again.
func (fw *forwarder) resolve(x *exchange, e informer.Entry) (target, error) {
	start := time.Now()
	defer fw.m.observe(stageResolve, start)
	r := e.Route
	switch r.State {
	case informer.StateSuspended:
		return target{}, ErrSuspended
	case informer.StatePending:
		return target{}, ErrNotReady
	case informer.StateStopped:
		return target{}, ErrStopped
	case informer.StateInvalid:
		return target{}, ErrInvalidConfiguration
	}
	x.node = r.Node
	if r.Local {
		x.pod = r.Pod.Name
		return target{pod: r.Pod, node: r.Node}, nil
	}
	if x.hopIn {
		return target{}, ErrHopLoop
	}
	return target{peer: net.JoinHostPort(r.NodeIP, strconv.Itoa(fw.peerPort)), node: r.Node}, nil
}
