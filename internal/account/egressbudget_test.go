package account

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// TestTokensPerDay: the override is a plain decimal count in range; any
// other value is refused by the parser and counts as no override on a
// claim, which stays a valid account.
func TestTokensPerDay(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int64
		ok    bool
	}{
		{"0", 0, true}, {"50000", 50000, true}, {"1000000000000", MaxTokensPerDay, true},
		{"1000000000001", 0, false}, {"-1", 0, false}, {"+5", 0, false}, {"05", 0, false}, {"5k", 0, false},
		{"", 0, false}, {" 5", 0, false}, {"1e3", 0, false},
	} {
		n, err := ParseTokensPerDay(tc.value)
		if (err == nil) != tc.ok || n != tc.want {
			t.Errorf("ParseTokensPerDay(%q) = %d, %v; want %d, ok %v", tc.value, n, err, tc.want, tc.ok)
		}
		c := &extensions.SandboxClaim{ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{LabelManagedBy: ManagedByValue, LabelUser: "alice"},
			Annotations: map[string]string{AnnotationTokenHash: strings.Repeat("ab", 32), AnnotationEgressTokensPerDay: tc.value},
		}}
		a, err := FromClaim(c)
		if err != nil {
			t.Fatalf("a claim with tokens per day %q is no account: %v", tc.value, err)
		}
		if got := a.TokensPerDay != nil; got != tc.ok || (got && *a.TokensPerDay != tc.want) {
			t.Errorf("FromClaim with %q: TokensPerDay %v, want %d (set %v)", tc.value, a.TokensPerDay, tc.want, tc.ok)
		}
	}
}
