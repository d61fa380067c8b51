package authapi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// Sandbox states shown to users.
const (
	StateReady     = "Ready"
	StateWaking    = "Waking"
	StateSuspended = "Suspended"
	StateMissing   = "Missing"
	// StateFailed means the sandbox's pod stopped (node eviction, spot
	// reclaim); the sweeper's leader has it created again.
	StateFailed = "Failed"
	// StateInvalid means the agent-sandbox controller gave up on the
	// sandbox for good (InvalidConfiguration): only an operator can mend it.
	StateInvalid = "Invalid"
)

// indexTokenHash indexes managed claims by their token hash annotation, so a
// login that sends only a bearer token finds its account.
const indexTokenHash = "token-hash"

// claimStore reads accounts from an informer over managed claims and writes
// them through the API server.
type claimStore struct {
	claims    *sandboxapi.SandboxClaimClient
	sandboxes *sandboxapi.SandboxClient
	ns        string
	prefix    string
	pool      string
	now       func() time.Time
	m         *Metrics
	informer  cache.SharedIndexInformer

	// shutdown ends when the server begins to shut down: the waits for
	// Ready, which a request may cut short, end with it.
	shutdown    context.Context
	endShutdown context.CancelFunc

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	created map[string]time.Time // claims this replica created, until Ready
}

func newClaimStore(o Options) *claimStore {
	s := &claimStore{
		claims:    o.Sandboxes.SandboxClaims(o.Namespace),
		sandboxes: o.Sandboxes.Sandboxes(o.Namespace),
		ns:        o.Namespace,
		prefix:    o.ClaimPrefix,
		pool:      o.WarmPool,
		now:       o.Now,
		m:         o.Metrics,
		waiters:   map[string]map[chan struct{}]struct{}{},
		created:   map[string]time.Time{},
	}
	s.shutdown, s.endShutdown = context.WithCancel(context.Background())
	managed := labels.SelectorFromSet(labels.Set{account.LabelManagedBy: account.ManagedByValue}).String()
	s.informer = sandboxapi.NewInformer(s.claims, &extensions.SandboxClaim{}, sandboxapi.InformerOptions{
		Tweak: func(o *metav1.ListOptions) { o.LabelSelector = managed },
		Transform: func(obj any) (any, error) {
			if c, ok := obj.(*extensions.SandboxClaim); ok {
				c.ManagedFields = nil
			}
			return obj, nil
		},
		Indexers: cache.Indexers{indexTokenHash: func(obj any) ([]string, error) {
			c, ok := obj.(*extensions.SandboxClaim)
			if !ok || c.Annotations[account.AnnotationTokenHash] == "" {
				return nil, nil
			}
			return []string{c.Annotations[account.AnnotationTokenHash]}, nil
		}},
	})
	_, _ = s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.changed(obj) },
		UpdateFunc: func(_, obj any) { s.changed(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			s.changed(obj)
		},
	})
	return s
}

func (s *claimStore) name(user string) string { return account.ClaimName(s.prefix, user) }

// changed wakes whoever waits on the claim and records create-to-Ready.
func (s *claimStore) changed(obj any) {
	c, ok := obj.(*extensions.SandboxClaim)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.created[c.Name]; ok && claimReady(c) {
		s.m.ClaimReady.Observe(s.now().Sub(t).Seconds())
		delete(s.created, c.Name)
	}
	for ch := range s.waiters[c.Name] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// get returns the cached claim of user, or nil.
func (s *claimStore) get(user string) *extensions.SandboxClaim {
	obj, ok, err := s.informer.GetStore().GetByKey(s.ns + "/" + s.name(user))
	if err != nil || !ok {
		return nil
	}
	return obj.(*extensions.SandboxClaim)
}

// byTokenHash returns the cached claims whose token hash is h.
func (s *claimStore) byTokenHash(h [32]byte) []*extensions.SandboxClaim {
	objs, err := s.informer.GetIndexer().ByIndex(indexTokenHash, hex.EncodeToString(h[:]))
	if err != nil {
		return nil
	}
	out := make([]*extensions.SandboxClaim, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*extensions.SandboxClaim))
	}
	return out
}

// accountOf returns the account of user from the cache; a missing, foreign,
// malformed or terminating claim is no account.
func (s *claimStore) accountOf(user string) (account.Account, *extensions.SandboxClaim, bool) {
	c := s.get(user)
	if c == nil {
		return account.Account{}, nil, false
	}
	a, err := account.FromClaim(c)
	if err != nil || a.User != user {
		return account.Account{}, nil, false
	}
	return a, c, true
}

// wait blocks until cond holds for the cached claim name (nil when absent)
// or ctx ends, driven by informer events rather than polling.
func (s *claimStore) wait(ctx context.Context, name string, cond func(*extensions.SandboxClaim) bool) (*extensions.SandboxClaim, bool) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	if s.waiters[name] == nil {
		s.waiters[name] = map[chan struct{}]struct{}{}
	}
	s.waiters[name][ch] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiters[name], ch)
		if len(s.waiters[name]) == 0 {
			delete(s.waiters, name)
		}
		s.mu.Unlock()
	}()
	for {
		var c *extensions.SandboxClaim
		if obj, ok, _ := s.informer.GetStore().GetByKey(s.ns + "/" + name); ok {
			c = obj.(*extensions.SandboxClaim)
		}
		if cond(c) {
			return c, true
		}
		select {
		case <-ctx.Done():
			return c, false
		case <-ch:
		}
	}
}

// waitReady waits up to timeout for user's claim to be Ready, and no
// longer once the server shuts down: the caller answers that the sandbox
// still wakes.
func (s *claimStore) waitReady(ctx context.Context, user string, timeout time.Duration) bool {
	start := time.Now()
	defer func() { s.m.Stage.WithLabelValues("claim_ready").Observe(time.Since(start).Seconds()) }()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer context.AfterFunc(s.shutdown, cancel)()
	_, ok := s.wait(ctx, s.name(user), func(c *extensions.SandboxClaim) bool { return c != nil && claimReady(c) })
	return ok
}

// waitSeen waits until the informer holds the claim with uid, so reads that
// follow (login, landing page) see what this replica just wrote.
func (s *claimStore) waitSeen(ctx context.Context, name string, uid types.UID) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s.wait(ctx, name, func(c *extensions.SandboxClaim) bool { return c != nil && c.UID == uid })
}

func claimReady(c *extensions.SandboxClaim) bool {
	return meta.IsStatusConditionTrue(c.Status.Conditions, agents.ConditionReady)
}

// newClaim builds the account claim of user.
func (s *claimStore) newClaim(user string, tokenHash [32]byte, epoch int64) *extensions.SandboxClaim {
	return &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      s.name(user),
			Namespace: s.ns,
			Labels:    map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: user},
			Annotations: map[string]string{
				account.LabelManagedBy:         account.ManagedByValue,
				account.AnnotationTokenHash:    hex.EncodeToString(tokenHash[:]),
				account.AnnotationSessionEpoch: strconv.FormatInt(epoch, 10),
			},
		},
		Spec: extensions.SandboxClaimSpec{
			WarmPoolRef:           extensions.WarmPoolRef{Name: s.pool},
			AdditionalPodMetadata: agents.PodMetadata{Labels: map[string]string{account.PodLabelUser: user}},
		},
	}
}

// create writes the account claim of user. A claim of that name, managed or
// not, makes it ErrExists.
func (s *claimStore) create(ctx context.Context, user string, tokenHash [32]byte, epoch int64) (*extensions.SandboxClaim, error) {
	start := time.Now()
	c, err := s.claims.Create(ctx, s.newClaim(user, tokenHash, epoch), metav1.CreateOptions{})
	s.m.Stage.WithLabelValues("claim_create").Observe(time.Since(start).Seconds())
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil, fmt.Errorf("create claim %s: %w", s.name(user), ErrExists)
	case err != nil:
		return nil, fmt.Errorf("create claim %s: %w: %w", s.name(user), ErrUnavailable, err)
	}
	s.mu.Lock()
	for name, t := range s.created {
		if s.now().Sub(t) > time.Hour {
			delete(s.created, name)
		}
	}
	s.created[c.Name] = s.now()
	s.mu.Unlock()
	return c, nil
}

// revokeSession ends one session on user's claim: it adds sid to the
// revoked list (or raises the epoch when the list is full), conditioned on
// the resourceVersion it read, retrying on conflict.
func (s *claimStore) revokeSession(ctx context.Context, user, sid string, tokenEpoch int64, expiry time.Time) error {
	start := time.Now()
	defer func() { s.m.Stage.WithLabelValues("revoke").Observe(time.Since(start).Seconds()) }()
	for range 8 {
		c, err := s.claims.Get(ctx, s.name(user), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get claim: %w: %w", ErrUnavailable, err)
		}
		a, err := account.FromClaim(c)
		if err != nil {
			return nil // not an account we can revoke on: nothing accepts it anyway
		}
		if !a.SessionValid(sid, tokenEpoch) {
			return nil // already revoked
		}
		epoch, list := a.Revoke(sid, expiry, s.now())
		kind := "logout"
		if epoch != a.Epoch {
			kind = "epoch"
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": c.ResourceVersion,
			"annotations": map[string]string{
				account.AnnotationSessionEpoch:    strconv.FormatInt(epoch, 10),
				account.AnnotationRevokedSessions: account.EncodeRevoked(list),
			},
		}})
		if err != nil {
			return err
		}
		_, err = s.claims.Patch(ctx, c.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("patch claim: %w: %w", ErrUnavailable, err)
		}
		s.m.Revocations.WithLabelValues(kind).Inc()
		// Let this replica's own reads (renewal, landing page) see it.
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s.wait(wctx, c.Name, func(c *extensions.SandboxClaim) bool {
			if c == nil {
				return true
			}
			a, err := account.FromClaim(c)
			return err != nil || !a.SessionValid(sid, tokenEpoch)
		})
		return nil
	}
	return fmt.Errorf("revoke session: %w: too many conflicts", ErrUnavailable)
}

// remove deletes the claim c (exactly that one, by UID).
func (s *claimStore) remove(ctx context.Context, c *extensions.SandboxClaim) error {
	start := time.Now()
	defer func() { s.m.Stage.WithLabelValues("claim_delete").Observe(time.Since(start).Seconds()) }()
	uid := c.UID
	err := s.claims.Delete(ctx, c.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // already gone, or replaced
	}
	if err != nil {
		return fmt.Errorf("delete claim: %w: %w", ErrUnavailable, err)
	}
	return nil
}

// state tells the user what their sandbox is doing, reading its Sandbox
// from the API server.
func (s *claimStore) state(ctx context.Context, c *extensions.SandboxClaim) string {
	var sb *agents.Sandbox
	if c != nil && c.DeletionTimestamp == nil && c.Status.Sandbox.Name != "" {
		if got, err := s.sandboxes.Get(ctx, c.Status.Sandbox.Name, metav1.GetOptions{}); err == nil {
			sb = got
		}
	}
	return stateOf(c, sb)
}

// stateOf is the state of claim c bound to sb (nil when unknown).
func stateOf(c *extensions.SandboxClaim, sb *agents.Sandbox) string {
	if c == nil || c.DeletionTimestamp != nil {
		return StateMissing
	}
	switch {
	case sb == nil:
	case sb.Spec.OperatingMode == agents.OperatingModeSuspended:
		return StateSuspended
	case agents.Invalid(sb):
		return StateInvalid
	case agents.Terminated(sb):
		return StateFailed
	}
	if claimReady(c) {
		return StateReady
	}
	return StateWaking
}
