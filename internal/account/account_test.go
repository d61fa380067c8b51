package account

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

func claim(labels, annotations map[string]string) *extensions.SandboxClaim {
	return &extensions.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: "dsh-bob", UID: testUID, Labels: labels, Annotations: annotations}}
}

// testUID is the metadata.uid of the claims these tests build.
const testUID = "7f3e2a10-0000-4000-8000-00000000b0b0"

func goodHash() string {
	h := HashToken("secret")
	return hex.EncodeToString(h[:])
}

func managedLabels(user string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelUser: user}
}

func TestFromClaim(t *testing.T) {
	tests := []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		wantErr     bool
		wantEpoch   int64
		wantRevoked int
	}{
		{name: "minimal", labels: managedLabels("bob"), annotations: map[string]string{AnnotationTokenHash: goodHash()}},
		{name: "epoch and revoked", labels: managedLabels("bob"), annotations: map[string]string{
			AnnotationTokenHash: goodHash(), AnnotationSessionEpoch: "3",
			AnnotationRevokedSessions: `[{"sid":"a","exp":10},{"sid":"b","exp":20}]`,
		}, wantEpoch: 3, wantRevoked: 2},
		{name: "unmanaged", labels: map[string]string{LabelUser: "bob"}, annotations: map[string]string{AnnotationTokenHash: goodHash()}, wantErr: true},
		{name: "other manager", labels: map[string]string{LabelManagedBy: "someone", LabelUser: "bob"}, annotations: map[string]string{AnnotationTokenHash: goodHash()}, wantErr: true},
		{name: "bad user", labels: managedLabels("Bob"), annotations: map[string]string{AnnotationTokenHash: goodHash()}, wantErr: true},
		{name: "missing hash", labels: managedLabels("bob"), wantErr: true},
		{name: "short hash", labels: managedLabels("bob"), annotations: map[string]string{AnnotationTokenHash: "abcd"}, wantErr: true},
		{name: "non-hex hash", labels: managedLabels("bob"), annotations: map[string]string{AnnotationTokenHash: strings.Repeat("zz", 32)}, wantErr: true},
		{name: "negative epoch", labels: managedLabels("bob"), annotations: map[string]string{AnnotationTokenHash: goodHash(), AnnotationSessionEpoch: "-1"}, wantErr: true},
		{name: "junk epoch", labels: managedLabels("bob"), annotations: map[string]string{AnnotationTokenHash: goodHash(), AnnotationSessionEpoch: "1e3"}, wantErr: true},
		{name: "junk revoked", labels: managedLabels("bob"), annotations: map[string]string{AnnotationTokenHash: goodHash(), AnnotationRevokedSessions: "{"}, wantErr: true},
		{name: "too many revoked", labels: managedLabels("bob"), annotations: map[string]string{
			AnnotationTokenHash: goodHash(), AnnotationRevokedSessions: "[" + strings.Repeat(`{"sid":"x","exp":1},`, MaxRevoked) + `{"sid":"y","exp":1}]`,
		}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := FromClaim(claim(tt.labels, tt.annotations))
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidClaim) {
					t.Fatalf("got %v, want ErrInvalidClaim", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.User != "bob" || a.UID != testUID || a.Epoch != tt.wantEpoch || len(a.Revoked) != tt.wantRevoked {
				t.Errorf("got %+v", a)
			}
			if !a.TokenMatches("secret") || a.TokenMatches("Secret") || a.TokenMatches("") {
				t.Error("token comparison is wrong")
			}
		})
	}
}

func TestSessionValid(t *testing.T) {
	live, gone := NewSessionID(testUID), NewSessionID(testUID)
	a := Account{UID: testUID, Epoch: 2, Revoked: []Revoked{{SessionID: gone, Expiry: 100}}}
	earlier := NewSessionID("0b5c2a1e-0000-4000-8000-000000000001")
	for _, tt := range []struct {
		name  string
		a     Account
		sid   string
		epoch int64
		want  bool
	}{
		{"at the epoch", a, live, 2, true},
		{"above the epoch", a, live, 3, true},
		{"below the epoch", a, live, 1, false},
		{"revoked", a, gone, 2, false},
		{"of an earlier claim of the name", a, earlier, 2, false},
		{"of an earlier claim, far above the epoch", a, earlier, 1 << 62, false},
		{"without a claim uid", a, "s", 2, false},
		{"uid alone", a, testUID + ".", 2, false},
		{"uid without separator", a, testUID, 2, false},
		{"uid as a prefix of a longer one", a, testUID + "0." + "x", 2, false},
		{"account without uid", Account{Epoch: 2}, "." + "x", 2, false},
	} {
		if got := tt.a.SessionValid(tt.sid, tt.epoch); got != tt.want {
			t.Errorf("%s: SessionValid(%q, %d) = %v, want %v", tt.name, tt.sid, tt.epoch, got, tt.want)
		}
	}
}

func TestNewSessionIDIsFreshAndBoundToTheClaim(t *testing.T) {
	a, b := NewSessionID(testUID), NewSessionID(testUID)
	if a == b || !strings.HasPrefix(a, testUID+".") || len(a) != len(testUID)+1+22 {
		t.Errorf("NewSessionID gave %q and %q", a, b)
	}
}

func TestPruneRevoked(t *testing.T) {
	now := time.Unix(100, 0)
	got := PruneRevoked([]Revoked{{"a", 99}, {"b", 100}, {"c", 101}}, now)
	if len(got) != 1 || got[0].SessionID != "c" {
		t.Errorf("got %v, want only c", got)
	}
}

func TestValidateUser(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"bob", true}, {"a", true}, {"bob-2", true}, {"b0b", true}, {strings.Repeat("a", MaxUserLen), true},
		{"", false}, {"Bob", false}, {"2bob", false}, {"-bob", false}, {"bob-", false}, {"bo_b", false},
		{"bo.b", false}, {"bob/../alice", false}, {"bob%2f", false}, {"böb", false}, {"bob ", false},
		{strings.Repeat("a", MaxUserLen+1), false}, {"admin", false}, {"u", false}, {"internal", false},
	} {
		err := ValidateUser(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateUser(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidUser) {
			t.Errorf("ValidateUser(%q) error %v is not ErrInvalidUser", tt.name, err)
		}
	}
}

// TestReferenceGatewayClaims is docs/operations.md's migration: a claim the
// reference gateway made (its marker an annotation) is no account until it
// gets the two labels, and then it is the same account with the same token.
func TestReferenceGatewayClaims(t *testing.T) {
	c := claim(nil, map[string]string{LabelManagedBy: ManagedByValue, AnnotationTokenHash: goodHash()})
	if _, err := FromClaim(c); !errors.Is(err, ErrInvalidClaim) {
		t.Fatalf("a reference gateway's claim: err = %v, want ErrInvalidClaim", err)
	}
	c.Labels = map[string]string{LabelManagedBy: ManagedByValue, LabelUser: strings.TrimPrefix(c.Name, "dsh-")}
	a, err := FromClaim(c)
	if err != nil {
		t.Fatalf("labelled: %v", err)
	}
	if a.User != "bob" || !a.TokenMatches("secret") {
		t.Errorf("labelled: user %q, token matches %v; want bob, true", a.User, a.TokenMatches("secret"))
	}
}
