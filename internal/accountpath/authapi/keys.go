package authapi

import (
	"context"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sandgate/sandgate/internal/jwt"
)

// Fields of the signing Secret.
const (
	secretKeysField  = "signing-keys.json"
	secretFlashField = "flash-key"
	flashKeyBytes    = 32
	// jwtLeeway is the clock skew the auth API tolerates on its own tokens.
	jwtLeeway = 10 * time.Second
	// entryLeeway is the clock leeway on entry codes, which live seconds:
	// only the replicas' own clocks are involved.
	entryLeeway = 2 * time.Second
	// replicaTokenTTL is the lifetime of a replica's token for one call.
	replicaTokenTTL = time.Minute
	// propagation covers replicas loading a rotated ring and proxies
	// refreshing their JWKS after a retired key leaves it.
	propagation = 2 * time.Minute
)

// keyState is one loaded version of the signing Secret. It is never
// modified: rotation builds a new ring from the Secret and a new state.
type keyState struct {
	ring     *jwt.KeyRing
	signer   *jwt.Signer
	origin   *jwt.Signer // origin sessions (subdomain routing)
	entry    *jwt.Signer // single-use entry codes
	replica  *jwt.Signer // one replica's calls to another
	flashKey []byte      // the Secret's flash-key, from which view is derived
	// view seals a new bearer token into the token view's cookie
	// (tokenview.go); every replica derives the same from the Secret.
	view cipher.AEAD
	// adminForm keys the admin pages' form tokens (adminFormToken), the
	// same on every replica.
	adminForm []byte
	version   string // the Secret's resourceVersion
}

// keyStore keeps the signing keys in one Secret shared by every replica:
// created when absent, watched so each replica sees every rotation, and
// rotated by whichever replica first writes the change (optimistic
// concurrency on resourceVersion, so racing replicas rotate once).
type keyStore struct {
	secrets     corev1client.SecretInterface
	name        string
	issuer      string
	audience    string
	ttl         time.Duration
	entryTTL    time.Duration
	rotation    time.Duration
	publish     time.Duration
	keep        time.Duration // how long a retired key stays for renewal
	now         func() time.Time
	log         *slog.Logger
	m           *Metrics
	state       atomic.Pointer[keyState]
	informer    cache.SharedIndexInformer
	rotateEvery time.Duration
	// refill wakes run before its next tick when the Secret is seen
	// emptied or a reset is asked for.
	refill chan struct{}
}

// MaxKeyRing bounds how many signing keys the settings may keep at once. A
// key is kept for a session's maximum age after it retired, so a short
// KEY_ROTATION_INTERVAL with a long COOKIE_MAX_AGE keeps many; 1000 keys are
// about 145 KB of Secret and less of JWKS, far inside the 1 MiB that each
// may hold (a Secret's limit, the node proxies' JWKS fetch limit).
const MaxKeyRing = 1000

// KeyRingSize is about how many keys the ring holds with these settings.
func KeyRingSize(cookieMaxAge, sessionTTL, rotation time.Duration) float64 {
	return float64(keyKeep(cookieMaxAge, sessionTTL))/float64(rotation) + 2
}

// keyKeep is how long a retired key is kept: as long as a session it
// signed can still be renewed, plus the time replicas and proxies take to
// see the ring change.
func keyKeep(cookieMaxAge, sessionTTL time.Duration) time.Duration {
	return cookieMaxAge + sessionTTL + propagation
}

func newKeyStore(o Options) *keyStore {
	k := &keyStore{
		secrets:  o.Kube.CoreV1().Secrets(o.Namespace),
		name:     o.SigningSecret,
		issuer:   o.Issuer,
		audience: o.Audience,
		ttl:      o.SessionTTL,
		entryTTL: o.EntryCodeTTL,
		rotation: o.KeyRotationInterval,
		publish:  min(o.KeyPublishDelay, o.KeyRotationInterval/2),
		keep:     keyKeep(o.CookieMaxAge, o.SessionTTL),
		now:      o.Now,
		log:      o.Logger.With("component", "keys"),
		m:        o.Metrics,
	}
	k.rotateEvery = max(min(o.KeyRotationInterval/4, time.Minute), 50*time.Millisecond)
	k.refill = make(chan struct{}, 1)
	sel := fields.OneTermEqualSelector("metadata.name", k.name).String()
	k.informer = cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = sel
			return k.secrets.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = sel
			return k.secrets.Watch(ctx, opts)
		},
	}, &corev1.Secret{}, cache.SharedIndexInformerOptions{})
	_, _ = k.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.observe(obj) },
		UpdateFunc: func(_, obj any) { k.observe(obj) },
		DeleteFunc: func(any) {
			k.log.Warn("signing secret deleted; the loaded keys go on signing and refill it once it exists again (re-apply manifests/authapi: the shipped RBAC has no create); to end every session, annotate it instead", "secret", k.name, "annotation", ResetKeysAnnotation)
		},
	})
	return k
}

// current returns the loaded keys, or nil before the first load.
func (k *keyStore) current() *keyState { return k.state.Load() }

// loaded returns the ring and flash key loaded, nil before the first load:
// what a Secret deleted or emptied under a running replica is written
// back from, so the sessions they signed stay valid.
func (k *keyStore) loaded() (*jwt.KeyRing, []byte) {
	if st := k.current(); st != nil {
		return st.ring, st.flashKey
	}
	return nil, nil
}

// emptied reports whether sec lacks keys or the flash key, as the
// manifests ship it.
func emptied(sec *corev1.Secret) bool {
	return len(sec.Data[secretKeysField]) == 0 || len(sec.Data[secretFlashField]) == 0
}

// An operator ends every session after a key leak by setting
// ResetKeysAnnotation on the signing Secret to a value it has not had
// (a timestamp): the next replica to see it writes a new ring in place of
// every key, and records the value in keysResetDoneAnnotation so the
// reset happens once. Emptying the Secret is no reset: running replicas
// refill it from the keys they hold.
const (
	ResetKeysAnnotation     = "sandgate.io/reset-signing-keys"
	keysResetDoneAnnotation = "sandgate.io/signing-keys-reset-done"
)

// resetAsked reports whether sec carries a reset not yet carried out.
func resetAsked(sec *corev1.Secret) bool {
	asked := sec.Annotations[ResetKeysAnnotation]
	return asked != "" && asked != sec.Annotations[keysResetDoneAnnotation]
}

// PublicKey makes the store a jwt.KeySource over every key it holds, so the
// auth API verifies (and renews) tokens of keys it no longer publishes.
func (k *keyStore) PublicKey(kid string) (ed25519.PublicKey, error) {
	st := k.current()
	if st == nil {
		return nil, fmt.Errorf("%w: keys not loaded", jwt.ErrUnknownKey)
	}
	return st.ring.PublicKey(kid)
}

// jwks returns the document node proxies verify with.
func (k *keyStore) jwks() ([]byte, error) {
	st := k.current()
	if st == nil {
		return nil, ErrUnavailable
	}
	return st.ring.JWKSAt(k.now(), k.ttl+jwtLeeway+propagation)
}

func (k *keyStore) observe(obj any) {
	sec, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	if emptied(sec) || resetAsked(sec) {
		select {
		case k.refill <- struct{}{}:
		default:
		}
		return
	}
	if err := k.install(sec); err != nil {
		k.log.Error("load signing secret", "secret", k.name, "error", err)
	}
}

// install loads sec unless it is the version already loaded.
func (k *keyStore) install(sec *corev1.Secret) error {
	if st := k.current(); st != nil && st.version == sec.ResourceVersion {
		return nil
	}
	st, err := k.parse(sec)
	if err != nil {
		return err
	}
	k.state.Store(st)
	k.m.SigningKeys.Set(float64(len(st.ring.Keys())))
	return nil
}

func (k *keyStore) parse(sec *corev1.Secret) (*keyState, error) {
	ring, err := jwt.UnmarshalKeyRing(sec.Data[secretKeysField])
	if err != nil {
		return nil, fmt.Errorf("parse signing keys: %w", err)
	}
	flashKey := sec.Data[secretFlashField]
	if len(flashKey) != flashKeyBytes {
		return nil, fmt.Errorf("parse signing secret: %s is %d bytes, want %d", secretFlashField, len(flashKey), flashKeyBytes)
	}
	signer, err := jwt.NewSigner(jwt.SignerOptions{KeyRing: ring, Issuer: k.issuer, Audience: k.audience, Lifetime: k.ttl, Now: k.now})
	if err != nil {
		return nil, fmt.Errorf("build signer: %w", err)
	}
	origin, err := signer.WithAudience(jwt.OriginAudience(k.audience), 0)
	if err != nil {
		return nil, fmt.Errorf("build origin signer: %w", err)
	}
	replica, err := signer.WithAudience(jwt.ReplicaAudience(k.audience), replicaTokenTTL)
	if err != nil {
		return nil, fmt.Errorf("build replica signer: %w", err)
	}
	entry, err := signer.WithAudience(jwt.EntryAudience(k.audience), k.entryTTL)
	if err != nil {
		return nil, fmt.Errorf("build entry code signer: %w", err)
	}
	view, err := tokenViewCipher(flashKey)
	if err != nil {
		return nil, fmt.Errorf("build token view cipher: %w", err)
	}
	adminForm, err := hkdf.Key(sha256.New, flashKey, nil, adminFormInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("derive admin form key: %w", err)
	}
	return &keyState{ring: ring, signer: signer, origin: origin, entry: entry, replica: replica, flashKey: flashKey, view: view, adminForm: adminForm, version: sec.ResourceVersion}, nil
}

// freshData returns the data of a new signing Secret: ring's keys, or a new
// ring when ring is nil, and flashKey or a new one.
func (k *keyStore) freshData(ring *jwt.KeyRing, flashKey []byte) (map[string][]byte, error) {
	if ring == nil {
		ring = jwt.NewKeyRing(k.now())
	}
	if len(flashKey) != flashKeyBytes {
		flashKey = make([]byte, flashKeyBytes)
		rand.Read(flashKey)
	}
	data, err := ring.Marshal()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{secretKeysField: data, secretFlashField: flashKey}, nil
}

// ensure loads the Secret, creating it (or filling an empty one shipped by
// the manifests) when needed, from the loaded keys if there are any, or
// replacing every key when an operator asked for a reset. Replicas racing
// to write it converge on whichever write lands first.
func (k *keyStore) ensure(ctx context.Context) error {
	var last error
	for range 5 {
		var upd *corev1.Secret // the write that fills or resets sec
		sec, err := k.secrets.Get(ctx, k.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			data, err := k.freshData(k.loaded())
			if err != nil {
				return err
			}
			created, err := k.secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: k.name, Labels: map[string]string{"app.kubernetes.io/name": "sandgate-authapi"}},
				Type:       corev1.SecretTypeOpaque,
				Data:       data,
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				last = err
				continue
			}
			if err != nil {
				return fmt.Errorf("create signing secret: %w", err)
			}
			k.log.Info("created signing secret", "secret", k.name)
			return k.install(created)
		case err != nil:
			return fmt.Errorf("get signing secret: %w", err)
		case resetAsked(sec):
			data, err := k.freshData(nil, nil)
			if err != nil {
				return err
			}
			upd = sec.DeepCopy()
			upd.Data = data
			upd.Annotations[keysResetDoneAnnotation] = sec.Annotations[ResetKeysAnnotation]
		case emptied(sec):
			ring, flash := k.loaded()
			if len(sec.Data[secretFlashField]) != 0 {
				flash = sec.Data[secretFlashField]
			}
			data, err := k.freshData(ring, flash)
			if err != nil {
				return err
			}
			if len(sec.Data[secretKeysField]) != 0 {
				data[secretKeysField] = sec.Data[secretKeysField]
			}
			upd = sec.DeepCopy()
			upd.Data = data
		default:
			return k.install(sec)
		}
		res, err := k.secrets.Update(ctx, upd, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			last = err
			continue
		}
		if err != nil {
			return fmt.Errorf("write signing secret: %w", err)
		}
		if resetAsked(sec) {
			k.log.Warn("signing keys reset as the Secret's annotation asks: every session ends", "secret", k.name, "annotation", ResetKeysAnnotation, "value", sec.Annotations[ResetKeysAnnotation])
		} else {
			k.log.Info("filled empty signing secret", "secret", k.name, "from_loaded_keys", k.current() != nil)
		}
		return k.install(res)
	}
	return fmt.Errorf("create signing secret: lost every race: %w", last)
}

// run watches the Secret and rotates keys until ctx ends.
func (k *keyStore) run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.informer.RunWithContext(ctx)
	}()
	t := time.NewTicker(k.rotateEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			<-done
			return
		case <-t.C:
		case <-k.refill:
		}
		if err := k.maybeRotate(ctx); err != nil && ctx.Err() == nil {
			k.log.Warn("rotate signing keys", "error", err)
		}
	}
}

// maybeRotate stages a new key when the newest one has signed for a
// rotation interval (minus the publish delay, so it activates on time),
// prunes keys retired longer than a session can last, and writes the ring
// back only if it changed, conditioned on the resourceVersion it read. A
// conflict means another replica did the same first; its write arrives
// through the informer.
func (k *keyStore) maybeRotate(ctx context.Context) error {
	sec, err := k.secrets.Get(ctx, k.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || err == nil && (emptied(sec) || resetAsked(sec)) {
		return k.ensure(ctx)
	}
	if err != nil {
		return fmt.Errorf("get signing secret: %w", err)
	}
	ring, err := jwt.UnmarshalKeyRing(sec.Data[secretKeysField])
	if err != nil {
		// Never overwrite keys we cannot read: tokens they signed would die.
		return fmt.Errorf("parse signing keys: %w", err)
	}
	now := k.now()
	keys := ring.Keys()
	newest := keys[len(keys)-1]
	staged := false
	if !newest.Active.After(now) && now.Sub(newest.Active) >= k.rotation-k.publish {
		ring.Stage(now, now.Add(k.publish))
		staged = true
	}
	pruned := ring.Prune(now, k.keep)
	if !staged && pruned == 0 {
		return k.install(sec)
	}
	data, err := ring.Marshal()
	if err != nil {
		return err
	}
	upd := sec.DeepCopy()
	upd.Data[secretKeysField] = data
	res, err := k.secrets.Update(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		k.log.Debug("signing keys changed by another replica")
		return nil
	}
	if err != nil {
		return fmt.Errorf("update signing secret: %w", err)
	}
	if staged {
		k.m.KeyRotations.Inc()
	}
	k.log.Info("rotated signing keys", "staged", staged, "pruned", pruned, "keys", len(ring.Keys()))
	return k.install(res)
}

var _ jwt.KeySource = (*keyStore)(nil)

// errNoKeys reports a signing attempt before the keys loaded.
var errNoKeys = errors.New("signing keys not loaded")

// tokenKind selects the audience (and lifetime) a token is signed for.
type tokenKind uint8

const (
	mainSession tokenKind = iota
	originSession
	entryCode
	replicaCall
)

// sign issues a main session token for c with the current keys and
// returns the claims as signed.
func (k *keyStore) sign(c jwt.Claims) (string, jwt.Claims, error) {
	return k.signAs(mainSession, c)
}

// signAs is sign for any kind of token.
func (k *keyStore) signAs(kind tokenKind, c jwt.Claims) (string, jwt.Claims, error) {
	st := k.current()
	if st == nil {
		return "", jwt.Claims{}, fmt.Errorf("%w: %w", ErrUnavailable, errNoKeys)
	}
	signer := st.signer
	switch kind {
	case originSession:
		signer = st.origin
	case entryCode:
		signer = st.entry
	case replicaCall:
		signer = st.replica
	}
	tok, signed, err := signer.Issue(c)
	if err != nil {
		return "", jwt.Claims{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return tok, signed, nil
}
