package jwt

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	if err := (VerifierOptions{Leeway: 31 * time.Second}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "leeway") || !strings.Contains(err.Error(), "issuer") {
		t.Errorf("VerifierOptions.Validate = %v, want leeway and issuer problems", err)
	}
	if err := (VerifierOptions{Keys: KeySet{}, Issuer: "i", Audience: "a", Leeway: maxLeeway}).Validate(); err != nil {
		t.Errorf("leeway of 30s rejected: %v", err)
	}
	if err := (SignerOptions{Lifetime: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "key ring") {
		t.Errorf("SignerOptions.Validate = %v", err)
	}
	if err := (FetcherOptions{URL: "file:///etc/passwd"}).Validate(); err == nil {
		t.Error("FetcherOptions accepted a file URL")
	}
}
