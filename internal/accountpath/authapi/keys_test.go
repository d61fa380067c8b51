package authapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestRacingReplicasCreateOneSecret(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	ins := make([]*instance, 3)
	for i := range ins {
		wg.Go(func() { ins[i] = e.start(t, nil) })
	}
	wg.Wait()
	list, err := e.kube.CoreV1().Secrets(e.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d secrets", len(list.Items))
	}
	want := list.Items[0].ResourceVersion
	for i, in := range ins {
		testkit.Eventually(t, fmt.Sprintf("replica %d loaded version %s", i, want), func() bool { return in.srv.keys.current().version == want })
	}
}

func TestEmptySecretFromTheManifestsIsFilled(t *testing.T) {
	e := newEnv(t)
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: DefaultSigningSecret}, Type: corev1.SecretTypeOpaque}
	if _, err := e.kube.CoreV1().Secrets(e.ns).Create(t.Context(), empty, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	in := e.start(t, nil)
	ring := e.ringOf(t)
	if got := in.srv.keys.current().ring.SigningKID(time.Now()); got != ring.SigningKID(time.Now()) {
		t.Errorf("replica signs with %q, Secret says %q", got, ring.SigningKID(time.Now()))
	}
}

// TestEmptiedSecretIsRefilledFromLoadedKeys: the Secret deleted and
// re-applied empty from the manifests (whose RBAC has no create) under a
// running replica is filled with the keys that replica holds, as soon as
// its informer sees it emptied rather than at its next rotation tick (a
// minute), so that a replica starting meanwhile does not write a new ring;
// the sessions the keys signed stay valid, and a replica started next
// loads them.
func TestEmptiedSecretIsRefilledFromLoadedKeys(t *testing.T) {
	e := newEnv(t)
	in := e.start(t, nil)
	kids := in.srv.keys.current().ring.Keys()
	secrets := e.kube.CoreV1().Secrets(e.ns)
	sec, err := secrets.Get(t.Context(), DefaultSigningSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data = nil
	if _, err := secrets.Update(t.Context(), sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Within(t, in.srv.keys.rotateEvery/2, "the emptied Secret refilled before the next rotation tick", func() bool {
		sec, err := secrets.Get(t.Context(), DefaultSigningSecret, metav1.GetOptions{})
		return err == nil && !emptied(sec)
	})
	ring := e.ringOf(t)
	for _, k := range kids {
		if _, err := ring.PublicKey(k.KID); err != nil {
			t.Errorf("key %s the replica signed with is gone from the refilled Secret: %v", k.KID, err)
		}
	}
	next := e.start(t, nil)
	if got, want := next.srv.keys.current().ring.SigningKID(time.Now()), kids[len(kids)-1].KID; got != want {
		t.Errorf("a replica started after the refill signs with %q, want %q", got, want)
	}
}

// TestResetAnnotationReplacesEveryKey: after a key leak an operator
// annotates the signing Secret; the next replica to see it writes a new
// ring in place of every key, once per annotation value, and every
// replica signs with the new key and no longer knows the old ones. An
// emptied Secret refilled afterwards does not bring them back.
func TestResetAnnotationReplacesEveryKey(t *testing.T) {
	e := newEnv(t)
	in := e.start(t, nil)
	other := e.start(t, nil)
	leaked := in.srv.keys.current().ring.Keys()
	secrets := e.kube.CoreV1().Secrets(e.ns)
	edit := func(change func(*corev1.Secret)) {
		t.Helper()
		sec, err := secrets.Get(t.Context(), DefaultSigningSecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(sec)
		if _, err := secrets.Update(t.Context(), sec, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	resetTo := func(value string) {
		t.Helper()
		edit(func(sec *corev1.Secret) { metav1.SetMetaDataAnnotation(&sec.ObjectMeta, ResetKeysAnnotation, value) })
		if err := in.srv.keys.maybeRotate(t.Context()); err != nil {
			t.Fatalf("rotation tick after the reset annotation %q: %v", value, err)
		}
	}
	noneOf := func(when string, ring *jwt.KeyRing, keys []jwt.KeyInfo) {
		t.Helper()
		for _, k := range keys {
			if _, err := ring.PublicKey(k.KID); err == nil {
				t.Errorf("%s: key %s is still in the ring", when, k.KID)
			}
		}
	}

	resetTo("2026-12-03T11:00:00Z")
	first := e.ringOf(t)
	noneOf("after the reset", first, leaked)
	signing := first.SigningKID(time.Now())
	for i, r := range []*instance{in, other} {
		testkit.Eventually(t, fmt.Sprintf("replica %d signs with the new key", i), func() bool {
			return r.srv.keys.current().ring.SigningKID(time.Now()) == signing
		})
		if _, err := r.srv.keys.PublicKey(leaked[0].KID); err == nil {
			t.Errorf("replica %d still verifies tokens of the leaked key", i)
		}
	}

	if err := other.srv.keys.maybeRotate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := e.ringOf(t).SigningKID(time.Now()); got != signing {
		t.Errorf("the same annotation reset the keys twice: signing %q, want %q", got, signing)
	}

	edit(func(sec *corev1.Secret) { sec.Data = nil })
	if err := in.srv.keys.maybeRotate(t.Context()); err != nil {
		t.Fatal(err)
	}
	noneOf("after a refill", e.ringOf(t), leaked)

	resetTo("2026-12-03T12:00:00Z")
	noneOf("after a second reset", e.ringOf(t), first.Keys())
}

// TestKeyStoreStagesPublishesActivatesAndPrunes drives one rotation cycle
// on a fake clock against the real Secret.
func TestKeyStoreStagesPublishesActivatesAndPrunes(t *testing.T) {
	e := newEnv(t)
	clock := testkit.NewOffsetClock()
	o := e.options()
	o.Now = clock.Now
	o.Logger = slog.New(slog.DiscardHandler)
	o.SessionTTL = 10 * time.Minute
	o.CookieMaxAge = time.Hour
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	k := srv.keys
	if err := k.ensure(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := k.current().ring.SigningKID(clock.Now())

	clock.Advance(DefaultKeyRotationInterval - DefaultKeyPublishDelay)
	if err := k.maybeRotate(t.Context()); err != nil {
		t.Fatal(err)
	}
	keys := k.current().ring.Keys()
	if len(keys) != 2 {
		t.Fatalf("after a rotation interval: %d keys", len(keys))
	}
	staged := keys[1].KID
	if got := k.current().ring.SigningKID(clock.Now()); got != first {
		t.Errorf("the staged key signs before its activation")
	}
	jwks, _ := k.jwks()
	if set, err := jwt.ParseJWKS(jwks); err != nil || set[staged] == nil {
		t.Errorf("staged key not published: %v", err)
	}
	// A second replica deciding at the same moment changes nothing more.
	if err := k.maybeRotate(t.Context()); err != nil || len(k.current().ring.Keys()) != 2 {
		t.Errorf("second decision: %v, %d keys", err, len(k.current().ring.Keys()))
	}

	clock.Advance(DefaultKeyPublishDelay)
	if got := k.current().ring.SigningKID(clock.Now()); got != staged {
		t.Errorf("signing kid after the publish delay %q, want the staged %q", got, staged)
	}
	// The retired key stays for renewal for the session's maximum age.
	clock.Advance(o.CookieMaxAge)
	if err := k.maybeRotate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := k.current().ring.PublicKey(first); err != nil {
		t.Errorf("retired key pruned before the maximum age plus margin: %v", err)
	}
	jwks, _ = k.jwks()
	if set, _ := jwt.ParseJWKS(jwks); set[first] != nil {
		t.Error("a key retired for longer than the token lifetime is still published")
	}
	clock.Advance(o.SessionTTL + propagation + time.Second)
	if err := k.maybeRotate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := k.current().ring.PublicKey(first); err == nil {
		t.Error("retired key kept past the maximum age")
	}
}

// TestRotationLogsNobodyOut: with rotations every minute and 4-minute
// tokens, on a clock both replicas and the node proxy view share, a client
// that renews as a node proxy does (under half the lifetime left) is
// accepted by a JWKS-only verifier at every step of eight rotations.
func TestRotationLogsNobodyOut(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	const (
		ttl      = 4 * time.Minute
		rotation = time.Minute
		step     = rotation / 5
	)
	clock := testkit.NewOffsetClock()
	edit := func(o *Options) {
		o.SessionTTL = ttl
		o.KeyRotationInterval = rotation
		o.KeyPublishDelay = 18 * time.Second
		o.Now = clock.Now
	}
	a := e.start(t, edit)
	b := e.start(t, edit) // a second replica rotates too; they must not fight
	replicas := []*instance{a, b}
	_, ck := a.signupJSON(t, "alice")
	pv := e.proxyViewAt(t, b, clock.Now)
	proxy := map[string]string{"Authorization": "Bearer " + saToken(t, e.ns, "nodeproxy", DefaultInternalAudience)}

	tok := ck.Value
	kids := map[string]bool{}
	for i := range 40 {
		if err := pv.accepts(tok); err != nil {
			t.Fatalf("step %d: the session was refused: %v", i, err)
		}
		c, _ := pv.verifier.Verify(tok)
		d, _ := jwt.Decode(tok)
		kids[d.KID] = true
		if c.Expiry.Sub(clock.Now()) < ttl/2 {
			in := replicas[i%2]
			resp, body := in.do(t, req{method: "POST", path: renewPath, json: `{"token":"` + tok + `"}`, header: proxy})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("step %d: renew: %d %s", i, resp.StatusCode, body)
			}
			var out renewResponse
			mustJSON(t, body, &out)
			tok = out.Token
		}
		clock.Advance(step)
		for _, in := range []*instance{replicas[i%2], replicas[1-i%2]} {
			if err := in.srv.keys.maybeRotate(t.Context()); err != nil {
				t.Fatalf("step %d: rotate: %v", i, err)
			}
		}
		e.keysSeen(t, replicas...)
	}
	if len(kids) < 3 {
		t.Errorf("tokens were signed by %d keys in eight rotations", len(kids))
	}
	// Two replicas rotating on the same clock staged one key per interval,
	// not one each.
	if n := len(e.ringOf(t).Keys()); n > 12 {
		t.Errorf("%d keys after eight rotation intervals: replicas rotated twice", n)
	}
}

// keysSeen waits until every replica has installed the signing Secret as
// the API server holds it now (or a later version).
func (e *env) keysSeen(t *testing.T, replicas ...*instance) {
	t.Helper()
	sec, err := e.kube.CoreV1().Secrets(e.ns).Get(t.Context(), DefaultSigningSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := strconv.ParseUint(sec.ResourceVersion, 10, 64)
	for i, in := range replicas {
		testkit.Eventually(t, fmt.Sprintf("replica %d installed signing keys version %s", i, sec.ResourceVersion), func() bool {
			got, _ := strconv.ParseUint(in.srv.keys.current().version, 10, 64)
			return got >= want
		})
	}
}

func TestTwoReplicasShareSessionsAndSurviveRestarts(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	a := e.start(t, nil)
	b := e.start(t, nil)
	token, fromA := a.signupJSON(t, "alice")
	fromB := b.login(t, token)

	pvA := e.proxyView(t, a)
	pvB := e.proxyView(t, b)
	for name, ck := range map[string]*http.Cookie{"from A": fromA, "from B": fromB} {
		for pvName, pv := range map[string]*proxyView{"A's JWKS": pvA, "B's JWKS": pvB} {
			if err := pv.accepts(ck.Value); err != nil {
				t.Errorf("cookie %s refused with %s: %v", name, pvName, err)
			}
		}
	}
	signedIn := func(in *instance, ck *http.Cookie) bool {
		_, page := in.do(t, req{method: "GET", path: "/", cookies: []*http.Cookie{ck}})
		return between(page, "Signed in as <strong>", "</strong>") == "alice"
	}
	if !signedIn(b, fromA) || !signedIn(a, fromB) {
		t.Fatal("a replica does not accept the other's cookie")
	}

	a.stop()
	if !signedIn(b, fromA) {
		t.Error("B refuses A's cookie once A is gone")
	}
	fromB2 := b.login(t, token)

	a2 := e.start(t, nil)
	for name, ck := range map[string]*http.Cookie{"A's old": fromA, "B's": fromB2} {
		if !signedIn(a2, ck) {
			t.Errorf("restarted A refuses %s cookie", name)
		}
	}
	fromA2 := a2.login(t, token)
	b.stop()
	if !signedIn(a2, fromA2) {
		t.Error("A refuses its own cookie once B is gone")
	}
	pvA2 := e.proxyView(t, a2)
	for name, ck := range map[string]*http.Cookie{"A": fromA, "B": fromB, "B2": fromB2, "A2": fromA2} {
		if err := pvA2.accepts(ck.Value); err != nil {
			t.Errorf("cookie %s refused after both restarts: %v", name, err)
		}
	}
}
