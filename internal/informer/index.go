package informer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// Lookup outcomes that drive a decision; the proxy maps them to statuses.
var (
	// ErrNoAccount means no managed claim holds the user's account.
	ErrNoAccount = errors.New("no account")
	// ErrInvalidAccount means the user's claim has malformed account
	// annotations, so it cannot be trusted.
	ErrInvalidAccount = errors.New("invalid account")
	// ErrNotSynced means the claims have not been listed yet, so an
	// account the caches do not hold may still exist.
	ErrNotSynced = errors.New("caches not synced yet")
)

// State says whether a user's sandbox can take traffic now.
type State int

// States of a Route.
const (
	// StatePending means no sandbox is adopted yet, or it is not Ready, or the
	// caches have not yet seen its pod or node.
	StatePending State = iota
	// StateSuspended means the Sandbox's operatingMode is Suspended.
	StateSuspended
	// StateReady means the Sandbox is Ready and its pod or node is known.
	StateReady
	// StateStopped means the Sandbox's pod terminated (node eviction, spot
	// reclaim, the app exited): it is being created again.
	StateStopped
	// StateInvalid means the controller gave up on the Sandbox for good
	// (Ready reason InvalidConfiguration): an operator must change it.
	StateInvalid
)

// String names the state for logs.
func (s State) String() string {
	switch s {
	case StateSuspended:
		return "suspended"
	case StateReady:
		return "ready"
	case StateStopped:
		return "stopped"
	case StateInvalid:
		return "invalid"
	}
	return "pending"
}

// Pod is the upstream of a Ready sandbox whose pod runs on this node.
type Pod struct {
	Namespace string
	Name      string
	UID       string
	Container string
	// Addr is the app's ip:port.
	Addr string
}

// Route is where a user's traffic goes.
type Route struct {
	State State
	// Sandbox is the adopted Sandbox's name; empty before adoption.
	Sandbox string
	// Node runs the sandbox's pod: set once the pod is scheduled, Ready or
	// not (the waking page shows that step). NodeIP is its InternalIP, set
	// when State is StateReady.
	Node   string
	NodeIP string
	// Local reports that Node is this node; Pod is then set.
	Local bool
	Pod   Pod
}

// Routable reports whether traffic can go to the route now, on a node
// other than away ("": any node).
func (r Route) Routable(away string) bool {
	return r.State == StateReady && (away == "" || r.Node != away)
}

// Entry is what Lookup knows about a user. Account.Revoked is shared with
// the cache: read it, never modify it.
type Entry struct {
	Account account.Account
	Route   Route
}

// Index answers user lookups from informer caches. Build it with New, start
// it with Run and wait for WaitForSync before serving. It is safe for
// concurrent use.
type Index struct {
	opts Options
	log  *slog.Logger

	claims    cache.SharedIndexInformer
	sandboxes cache.SharedIndexInformer
	pods      cache.SharedIndexInformer
	nodes     cache.SharedIndexInformer

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change

	// watches are WatchAccount's subscribers by user.
	watchMu sync.Mutex
	watches map[string]map[*accountWatch]struct{}
}

// New validates opts and builds the informers; Run starts them.
func New(opts Options) (*Index, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("informer options: %w", err)
	}
	opts = opts.withDefaults()
	x := &Index{opts: opts, log: opts.Logger.With("component", "informer"), changed: make(chan struct{})}
	managed := labels.SelectorFromSet(labels.Set{account.LabelManagedBy: account.ManagedByValue}).String()
	onNode := fields.OneTermEqualSelector("spec.nodeName", opts.NodeName).String()

	x.claims = sandboxapi.NewInformer(opts.Claims, &extensions.SandboxClaim{}, sandboxapi.InformerOptions{
		Tweak:     func(o *metav1.ListOptions) { o.LabelSelector = managed },
		Transform: sandboxapi.Keep(x.transformClaim),
	})
	x.sandboxes = sandboxapi.NewInformer(opts.Sandboxes, &agents.Sandbox{}, sandboxapi.InformerOptions{
		Transform: sandboxapi.Keep(x.transformSandbox),
	})
	x.pods = sandboxapi.NewInformer(opts.Pods, &corev1.Pod{}, sandboxapi.InformerOptions{
		Tweak:     func(o *metav1.ListOptions) { o.FieldSelector = onNode },
		Transform: sandboxapi.Keep(x.transformPod),
		Indexers:  cache.Indexers{sandboxUIDIndex: indexSandboxUID},
	})
	x.nodes = sandboxapi.NewInformer(opts.Nodes, &corev1.Node{}, sandboxapi.InformerOptions{
		Transform: sandboxapi.Keep(x.transformNode),
		Indexers:  cache.Indexers{nodeIPIndex: indexNodeIP},
	})
	if err := x.addHandlers(); err != nil {
		return nil, err
	}
	return x, nil
}

// Run runs the informers until ctx ends and returns once they stopped.
func (x *Index) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, inf := range x.informers() {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	wg.Wait()
	return nil
}

// HasSynced reports whether every informer has listed its objects once.
func (x *Index) HasSynced() bool {
	for _, inf := range x.informers() {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// WaitForSync blocks until HasSynced or ctx ends.
func (x *Index) WaitForSync(ctx context.Context) error {
	var synced []cache.InformerSynced
	for _, inf := range x.informers() {
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("wait for informer sync: %w", context.Cause(ctx))
	}
	return nil
}

func (x *Index) informers() []cache.SharedIndexInformer {
	return []cache.SharedIndexInformer{x.claims, x.sandboxes, x.pods, x.nodes}
}

// Lookup returns user's account and route from the caches, or an error
// wrapping ErrNoAccount, ErrInvalidAccount or, before the claims are
// listed, ErrNotSynced. It never calls the API server.
func (x *Index) Lookup(user string) (Entry, error) {
	c, ok := get[*claimEntry](x.claims, x.opts.Namespace+"/"+x.opts.ClaimPrefix+user)
	if !ok || c.user != user {
		if !x.claims.HasSynced() {
			return Entry{}, ErrNotSynced
		}
		return Entry{}, ErrNoAccount
	}
	if c.invalid {
		return Entry{}, ErrInvalidAccount
	}
	return Entry{Account: c.account, Route: x.route(c.sandbox)}, nil
}

// route resolves a Sandbox name to where its pod can be reached.
func (x *Index) route(name string) Route {
	r := Route{Sandbox: name}
	if name == "" {
		return r
	}
	s, ok := get[*sandboxEntry](x.sandboxes, x.opts.Namespace+"/"+name)
	switch {
	case !ok:
		return r
	case s.suspended:
		r.State = StateSuspended
		return r
	case s.invalid:
		r.State = StateInvalid
		return r
	case s.stopped:
		r.State = StateStopped
		return r
	case !s.ready || s.node == "":
		r.Node = s.node
		return r
	}
	if s.node != x.opts.NodeName {
		n, ok := get[*nodeEntry](x.nodes, s.node)
		if !ok || n.ip == "" {
			return r
		}
		r.State, r.Node, r.NodeIP = StateReady, s.node, n.ip
		return r
	}
	p, ok := x.podOf(s)
	if !ok {
		return r
	}
	r.State, r.Node, r.Local = StateReady, s.node, true
	if n, ok := get[*nodeEntry](x.nodes, s.node); ok {
		r.NodeIP = n.ip
	}
	r.Pod = Pod{Namespace: p.namespace, Name: p.name, UID: p.uid, Container: p.container, Addr: p.addr}
	return r
}

func (p *podEntry) routable(node string) bool {
	return p.ready && !p.terminating && p.ip != "" && p.container != "" && p.node == node
}

// podOf is the routable pod on this node that s controls, found by its
// controller ownerReference, which every release keeps. Of several (a
// replacement starting while the old pod has not gone), the one named by
// s's pod hint wins; without it none does.
func (x *Index) podOf(s *sandboxEntry) (*podEntry, bool) {
	var found *podEntry
	n := 0
	for _, p := range x.ownedPods(s.uid) {
		if !p.routable(x.opts.NodeName) {
			continue
		}
		if p.name == s.podHint {
			return p, true
		}
		found = p
		n++
	}
	return found, n == 1
}

// ownedPods are this node's pods whose controller is the Sandbox with uid.
func (x *Index) ownedPods(uid string) []*podEntry {
	if uid == "" {
		return nil
	}
	objs, err := x.pods.GetIndexer().ByIndex(sandboxUIDIndex, uid)
	if err != nil {
		return nil
	}
	pods := make([]*podEntry, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*podEntry); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

// sandboxUIDIndex indexes pods by the UID of the Sandbox that controls them.
const sandboxUIDIndex = "sandbox-uid"

func indexSandboxUID(obj any) ([]string, error) {
	if p, ok := obj.(*podEntry); ok && p.sandboxUID != "" {
		return []string{p.sandboxUID}, nil
	}
	return nil, nil
}

// nodeIPIndex indexes nodes by InternalIP.
const nodeIPIndex = "ip"

func indexNodeIP(obj any) ([]string, error) {
	if n, ok := obj.(*nodeEntry); ok && n.ip != "" {
		return []string{n.ip}, nil
	}
	return nil, nil
}

// IsNodeIP reports whether ip is some node's InternalIP, so the node proxy
// can tell another node's proxy from a client.
func (x *Index) IsNodeIP(ip string) bool {
	objs, err := x.nodes.GetIndexer().ByIndex(nodeIPIndex, ip)
	return err == nil && len(objs) > 0
}

// get reads one entry of an informer's store by key.
func get[T any](inf cache.SharedIndexInformer, key string) (T, bool) {
	obj, ok, err := inf.GetStore().GetByKey(key)
	if err != nil || !ok {
		var zero T
		return zero, false
	}
	e, ok := obj.(T)
	return e, ok
}
