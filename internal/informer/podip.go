package informer

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// ErrUnknownCaller means an address is not a Running sandbox pod of a
// managed claim on this node, so nothing it sends may be trusted.
var ErrUnknownCaller = errors.New("unknown caller")

// Caller is the account behind a sandbox pod's address.
type Caller struct {
	User    string
	Sandbox string
	Pod     string
	// TokensPerDay is an admin's egress budget override on the user's
	// claim, nil when there is none.
	TokensPerDay *int64
}

// Callers finds the account behind a source address from the Index's
// caches: pod IP -> pod -> the Sandbox its controller ownerReference names
// -> claim. It keeps three reverse maps (pods by IP, Sandboxes by UID,
// claims by Sandbox name), fed by the informers' events; the entries
// themselves are always read fresh from the caches.
type Callers struct {
	x         *Index
	podsByIP  *reverseMap
	sbByUID   *reverseMap
	claimBySb *reverseMap
	fed       []cache.ResourceEventHandlerRegistration // the maps' feeds
}

// Callers builds the reverse maps and subscribes them to the informers.
// Call it once, before or after Run: the informers replay what they
// already hold.
func (x *Index) Callers() (*Callers, error) {
	c := &Callers{x: x, podsByIP: newReverseMap(), sbByUID: newReverseMap(), claimBySb: newReverseMap()}
	feeds := []struct {
		inf   cache.SharedIndexInformer
		m     *reverseMap
		value func(any) string
	}{
		{x.pods, c.podsByIP, func(o any) string { return field(o, func(p *podEntry) string { return p.ip }) }},
		{x.sandboxes, c.sbByUID, func(o any) string { return field(o, func(s *sandboxEntry) string { return s.uid }) }},
		{x.claims, c.claimBySb, func(o any) string { return field(o, func(e *claimEntry) string { return e.sandbox }) }},
	}
	for _, f := range feeds {
		reg, err := f.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { f.m.put(o, f.value(o)) },
			UpdateFunc: func(_, o any) { f.m.put(o, f.value(o)) },
			DeleteFunc: func(o any) { f.m.put(o, "") },
		})
		if err != nil {
			return nil, fmt.Errorf("add caller handler: %w", err)
		}
		c.fed = append(c.fed, reg)
	}
	return c, nil
}

// synced reports whether the caches have listed everything once and the
// maps have been fed all of it.
func (c *Callers) synced() bool {
	for _, reg := range c.fed {
		if !reg.HasSynced() {
			return false
		}
	}
	return c.x.HasSynced()
}

// ByIP returns the account whose sandbox pod has address ip: one Ready,
// not terminating pod on this node (the pod informer sees no other), not
// on the host network (a node's address), whose controller is a Sandbox
// that runs on this node
// and is neither suspended nor stopped, adopted by a valid managed claim
// named for its user. Anything else, including two pods claiming the
// address, wraps ErrUnknownCaller; before the caches have listed
// everything once it is ErrNotSynced. It never calls the API server.
func (c *Callers) ByIP(ip string) (Caller, error) {
	x := c.x
	if !c.synced() {
		return Caller{}, ErrNotSynced
	}
	if ip == "" || x.IsNodeIP(ip) {
		return Caller{}, fmt.Errorf("%w: node address", ErrUnknownCaller)
	}
	pod, err := one(x.pods, c.podsByIP, ip, func(p *podEntry) bool {
		return p.ip == ip && p.routable(x.opts.NodeName)
	})
	if err != nil {
		return Caller{}, fmt.Errorf("pod: %w", err)
	}
	if pod.sandboxUID == "" {
		return Caller{}, fmt.Errorf("%w: pod has no Sandbox controller", ErrUnknownCaller)
	}
	s, err := one(x.sandboxes, c.sbByUID, pod.sandboxUID, func(s *sandboxEntry) bool { return s.uid == pod.sandboxUID })
	if err != nil {
		return Caller{}, fmt.Errorf("sandbox: %w", err)
	}
	if s.suspended || s.stopped || s.invalid || s.node != x.opts.NodeName {
		return Caller{}, fmt.Errorf("%w: sandbox not running here", ErrUnknownCaller)
	}
	claim, err := one(x.claims, c.claimBySb, s.name, func(e *claimEntry) bool { return e.sandbox == s.name })
	if err != nil {
		return Caller{}, fmt.Errorf("claim: %w", err)
	}
	if claim.invalid || claim.user == "" || claim.name != x.opts.ClaimPrefix+claim.user {
		return Caller{}, fmt.Errorf("%w: no valid account", ErrUnknownCaller)
	}
	return Caller{User: claim.user, Sandbox: s.name, Pod: pod.name, TokensPerDay: claim.account.TokensPerDay}, nil
}

// one returns the single cached entry that m lists under value and that
// still matches ok (the maps may trail the caches by an event); none or
// several wrap ErrUnknownCaller.
func one[T any](inf cache.SharedIndexInformer, m *reverseMap, value string, ok func(T) bool) (T, error) {
	var found []T
	for _, key := range m.keys(value) {
		if e, exists := get[T](inf, key); exists && ok(e) {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		var zero T
		return zero, fmt.Errorf("%w: %d matches", ErrUnknownCaller, len(found))
	}
	return found[0], nil
}

func field[T any](obj any, f func(T) string) string {
	if e, ok := obj.(T); ok {
		return f(e)
	}
	return ""
}

// reverseMap maps a value (an IP, a name) to the store keys of the entries
// that hold it.
type reverseMap struct {
	mu      sync.RWMutex
	byValue map[string]map[string]struct{}
	value   map[string]string // key -> its current value
}

func newReverseMap() *reverseMap {
	return &reverseMap{byValue: make(map[string]map[string]struct{}), value: make(map[string]string)}
}

// put files obj's key under value, or under nothing when value is "";
// obj may be a deletion tombstone.
func (m *reverseMap) put(obj any, value string) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drop(key)
	if value == "" {
		return
	}
	m.value[key] = value
	if m.byValue[value] == nil {
		m.byValue[value] = make(map[string]struct{}, 1)
	}
	m.byValue[value][key] = struct{}{}
}

// drop forgets key; the caller holds mu.
func (m *reverseMap) drop(key string) {
	old, ok := m.value[key]
	if !ok {
		return
	}
	delete(m.value, key)
	delete(m.byValue[old], key)
	if len(m.byValue[old]) == 0 {
		delete(m.byValue, old)
	}
}

func (m *reverseMap) keys(value string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.byValue[value]))
	for k := range m.byValue[value] {
		out = append(out, k)
	}
	return out
}
