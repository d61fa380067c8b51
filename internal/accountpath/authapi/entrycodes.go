package authapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/account"
)

// maxUsedEntryCodes bounds the unexpired redeemed codes one claim lists;
// entering an origin is rare, so only a user minting codes in a loop fills
// it, and then only their own entries wait.
const maxUsedEntryCodes = 64

// errCodeUsed reports an entry code redeemed before.
var errCodeUsed = errors.New("entry code already used")

// usedCodes parses the used-entry-codes annotation, keeping the entries
// that are well formed and unexpired at now. Being API-server data, it is
// read leniently: a malformed entry is dropped.
func usedCodes(v string, now time.Time) map[string]int64 {
	out := map[string]int64{}
	for e := range strings.SplitSeq(v, ",") {
		id, exp, ok := strings.Cut(e, ":")
		if !ok || id == "" || len(id) > 64 {
			continue
		}
		t, err := strconv.ParseInt(exp, 10, 64)
		if err != nil || t < now.Unix() {
			continue
		}
		out[id] = t
	}
	return out
}

func encodeUsedCodes(m map[string]int64) string {
	parts := make([]string, 0, len(m))
	for id, exp := range m {
		parts = append(parts, id+":"+strconv.FormatInt(exp, 10))
	}
	return strings.Join(parts, ",")
}

// useEntryCode records code id (valid until exp) as redeemed on user's
// claim, conditioned on the resourceVersion it read, so that of two
// replicas redeeming the same code at once exactly one succeeds. It
// returns errCodeUsed for a code redeemed before.
func (s *claimStore) useEntryCode(ctx context.Context, user, id string, exp time.Time) error {
	for range 8 {
		c, err := s.claims.Get(ctx, s.name(user), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: no account", ErrSessionEnded)
		}
		if err != nil {
			return fmt.Errorf("get claim: %w: %w", ErrUnavailable, err)
		}
		used := usedCodes(c.Annotations[account.AnnotationUsedEntryCodes], s.now())
		if _, ok := used[id]; ok {
			return errCodeUsed
		}
		if len(used) >= maxUsedEntryCodes {
			return fmt.Errorf("%w: too many entry codes in flight", ErrUnavailable)
		}
		// Kept as long as the verifier still accepts the code: past
		// exp, within its leeway, a forgotten code would redeem again.
		used[id] = exp.Add(entryLeeway).Unix()
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": c.ResourceVersion,
			"annotations":     map[string]string{account.AnnotationUsedEntryCodes: encodeUsedCodes(used)},
		}})
		if err != nil {
			return err
		}
		_, err = s.claims.Patch(ctx, c.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case apierrors.IsConflict(err):
			continue
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%w: no account", ErrSessionEnded)
		case err != nil:
			return fmt.Errorf("patch claim: %w: %w", ErrUnavailable, err)
		}
		return nil
	}
	return fmt.Errorf("use entry code: %w: too many conflicts", ErrUnavailable)
}
