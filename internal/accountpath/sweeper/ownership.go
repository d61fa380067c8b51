package sweeper

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// owners indexes claims by UID and by the Sandbox name they point at.
type owners struct {
	byUID     map[types.UID]*extensions.SandboxClaim
	bySandbox map[string][]*extensions.SandboxClaim
}

func indexOwners(claims []*extensions.SandboxClaim) owners {
	o := owners{byUID: make(map[types.UID]*extensions.SandboxClaim, len(claims)), bySandbox: make(map[string][]*extensions.SandboxClaim)}
	for _, c := range claims {
		o.byUID[c.UID] = c
		n := c.Status.Sandbox.Name
		if n == "" {
			n = c.Annotations[extensions.AnnotationSandboxName]
		}
		if n != "" {
			o.bySandbox[n] = append(o.bySandbox[n], c)
		}
	}
	return o
}

// claim is the claim of a managed sandbox: the one its claim-uid label
// names, else the first that points at it; nil when none does.
func (o owners) claim(sb *agents.Sandbox) *extensions.SandboxClaim {
	if c := o.byUID[types.UID(sb.Labels[agents.LabelClaimUID])]; c != nil {
		return c
	}
	for _, c := range o.bySandbox[sb.Name] {
		return c
	}
	return nil
}

// user names the account of a managed sandbox (its claim's user label).
func (o owners) user(sb *agents.Sandbox) string { return userOf(o.claim(sb)) }

func userOf(c *extensions.SandboxClaim) string {
	if c == nil {
		return ""
	}
	return c.Labels[account.LabelUser]
}

// managed reports whether sb belongs to the auth API: at least one claim
// points at it (its claim-uid label, or a claim's status.sandbox.name) and
// every claim that does is managed and not being deleted. A claim-uid label
// whose claim is not in the cache yet counts as unknown, hence unmanaged.
func (o owners) managed(sb *agents.Sandbox) bool {
	var found []*extensions.SandboxClaim
	if uid := sb.Labels[agents.LabelClaimUID]; uid != "" {
		c := o.byUID[types.UID(uid)]
		if c == nil {
			return false
		}
		found = append(found, c)
	}
	found = append(found, o.bySandbox[sb.Name]...)
	for _, c := range found {
		if !account.Managed(c) || c.DeletionTimestamp != nil {
			return false
		}
	}
	return len(found) > 0
}
