package account

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRevoke(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s1, other := NewSessionID(testUID), NewSessionID(testUID)
	a := Account{UID: testUID, Epoch: 2, Revoked: []Revoked{{SessionID: "old", Expiry: now.Unix() - 1}, {SessionID: "live", Expiry: now.Unix() + 60}}}

	epoch, list := a.Revoke(s1, now.Add(time.Hour), now)
	if epoch != 2 || len(list) != 2 || list[0].SessionID != "live" || list[1] != (Revoked{SessionID: s1, Expiry: now.Add(time.Hour).Unix()}) {
		t.Errorf("Revoke = %d %+v, want the expired entry pruned and s1 added", epoch, list)
	}
	after := Account{UID: testUID, Epoch: epoch, Revoked: list}
	if after.SessionValid(s1, 2) || !after.SessionValid(other, 2) {
		t.Error("revoking one session did not end exactly that one")
	}
	if epoch, again := after.Revoke(s1, now.Add(time.Hour), now); epoch != 2 || len(again) != 2 {
		t.Errorf("revoking twice = %d %+v", epoch, again)
	}

	full := Account{UID: testUID, Epoch: 5}
	for i := range MaxRevoked {
		full.Revoked = append(full.Revoked, Revoked{SessionID: fmt.Sprint(i), Expiry: now.Unix() + 60})
	}
	epoch, list = full.Revoke("one-more", now.Add(time.Hour), now)
	if epoch != 6 || len(list) != 0 {
		t.Errorf("Revoke on a full list = %d %+v, want the epoch raised and the list emptied", epoch, list)
	}
	if (Account{UID: testUID, Epoch: epoch, Revoked: list}).SessionValid(other, 5) {
		t.Error("a session of the old epoch survived the raise")
	}
}

func TestEncodeRevokedRoundTrip(t *testing.T) {
	if got := EncodeRevoked(nil); got != "[]" {
		t.Errorf("EncodeRevoked(nil) = %q, want []", got)
	}
	in := []Revoked{{SessionID: "a", Expiry: 10}}
	var out []Revoked
	if err := json.Unmarshal([]byte(EncodeRevoked(in)), &out); err != nil || len(out) != 1 || out[0] != in[0] {
		t.Errorf("round trip = %+v, %v", out, err)
	}
}

func TestFromClaimRefusesTerminatingClaim(t *testing.T) {
	c := claim(managedLabels("bob"), map[string]string{AnnotationTokenHash: goodHash()})
	if _, err := FromClaim(c); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	c.DeletionTimestamp = &now
	if _, err := FromClaim(c); !errors.Is(err, ErrInvalidClaim) {
		t.Errorf("FromClaim of a terminating claim = %v, want ErrInvalidClaim", err)
	}
}
