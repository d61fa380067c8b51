package authapi

import (
	"cmp"
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// sandboxCache is where the admin views read Sandboxes: the sweeper's
// informer cache (Options.Activity offers it), never a call per account.
type sandboxCache interface {
	Sandbox(name string) (*agents.Sandbox, bool)
}

// Budget says the account's egress budget for the page: the count, "no
// limit", or "" when the node proxies' own limits apply.
func (r accountRow) Budget() string {
	switch {
	case r.EgressTokensPerDay == nil:
		return ""
	case *r.EgressTokensPerDay == 0:
		return "no limit"
	}
	return strconv.FormatInt(*r.EgressTokensPerDay, 10)
}

// usageView is what the admin views ask of the sweeper: the model tokens a
// user used today, which only the leader knows.
type usageView interface {
	ModelTokensToday(sb *agents.Sandbox, now time.Time) (int64, bool)
}

var _ usageView = (*sweeper.Sweeper)(nil)

// accountRow is one account as the admin page and API show it.
type accountRow struct {
	User    string `json:"user"`
	State   string `json:"state"`
	Why     string `json:"why,omitempty"`
	Node    string `json:"node,omitempty"`
	Sandbox string `json:"sandbox,omitempty"`
	// Created is when the account's claim was created (signup or recreate).
	Created time.Time `json:"created"`
	// Activity is what the idle rule says of a Running sandbox.
	Activity *activityView `json:"activity,omitempty"`
	// KeepAwakeUntil and WakeSchedule are the owner's settings.
	KeepAwakeUntil *time.Time `json:"keep_awake_until,omitempty"`
	WakeSchedule   string     `json:"wake_schedule,omitempty"`
	// EgressTokensPerDay is an admin's egress budget for the account (0:
	// no limit); absent, the node proxies' limits file or default applies.
	EgressTokensPerDay *int64 `json:"egress_tokens_per_day,omitempty"`
	// ModelTokensToday is what the account used today (UTC) through the
	// egress listeners; absent where this replica does not lead the sweep.
	ModelTokensToday *int64 `json:"model_tokens_today,omitempty"`
}

// activityView is the idle rule's view of one Running sandbox.
type activityView struct {
	// Exact: this replica leads the idle sweep and holds the nodes'
	// reports; otherwise only SuspendsAt's lower bound is known.
	Exact      bool       `json:"exact"`
	LastActive *time.Time `json:"last_active,omitempty"`
	// Source is what keeps it awake or last did: request, websocket,
	// model-call, activity, model, woken, grace, keep-awake, busy.
	Source     string     `json:"source,omitempty"`
	SuspendsAt *time.Time `json:"suspends_at,omitempty"`
}

// accountQuery is a filter and a page of the account list.
type accountQuery struct {
	State   string // one of the states, any case; empty: all
	Search  string // part of the user name, node or sandbox
	Page    int    // from 1
	PerPage int
}

const (
	defaultPerPage = 100
	maxPerPage     = 500
)

// accountQueryOf reads ?state=&q=&page=&per_page=, refusing what it cannot
// use.
func accountQueryOf(v url.Values) (accountQuery, error) {
	q := accountQuery{State: v.Get("state"), Search: strings.ToLower(strings.TrimSpace(v.Get("q"))), Page: 1, PerPage: defaultPerPage}
	if q.State != "" && !slices.ContainsFunc(allStates, func(s string) bool { return strings.EqualFold(s, q.State) }) {
		return q, badRequest("state must be one of %s", strings.Join(allStates, ", "))
	}
	if len(q.Search) > maxFieldLen {
		return q, badRequest("q is longer than %d bytes", maxFieldLen)
	}
	for name, p := range map[string]*int{"page": &q.Page, "per_page": &q.PerPage} {
		if s := v.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return q, badRequest("%s must be a positive number", name)
			}
			*p = n
		}
	}
	q.PerPage = min(q.PerPage, maxPerPage)
	return q, nil
}

// allStates are the states an account can be in, in the order the admin
// page counts them.
var allStates = []string{StateReady, StateWaking, StateSuspended, StateFailed, StateInvalid, StateMissing}

// accountPage is one page of the filtered account list.
type accountPage struct {
	Accounts []accountRow `json:"accounts"`
	// Total is how many accounts match the filter, Pages how many pages
	// they fill.
	Total   int `json:"total"`
	Page    int `json:"page"`
	PerPage int `json:"per_page"`
	Pages   int `json:"pages"`
	// States counts every account by state, whatever the filter.
	States map[string]int `json:"states"`
}

// listAccounts answers q from this replica's caches: the claim informer
// and the sweeper's Sandbox cache. Only the page's rows ask the idle rule.
func (s *Server) listAccounts(ctx context.Context, q accountQuery) accountPage {
	type entry struct {
		c  *extensions.SandboxClaim
		a  account.Account
		sb *agents.Sandbox
		st string
	}
	all := s.claims.informer.GetStore().List()
	out := accountPage{Page: q.Page, PerPage: q.PerPage, States: make(map[string]int, len(allStates)), Accounts: []accountRow{}}
	matched := make([]entry, 0, len(all))
	for _, obj := range all {
		c := obj.(*extensions.SandboxClaim)
		a, err := account.FromClaim(c)
		if err != nil {
			continue
		}
		sb := s.cachedSandbox(c)
		st := stateOf(c, sb)
		out.States[st]++
		if q.State != "" && !strings.EqualFold(q.State, st) {
			continue
		}
		if q.Search != "" && !strings.Contains(a.User, q.Search) && (sb == nil ||
			!strings.Contains(strings.ToLower(sb.Status.NodeName), q.Search) && !strings.Contains(sb.Name, q.Search)) {
			continue
		}
		matched = append(matched, entry{c: c, a: a, sb: sb, st: st})
	}
	slices.SortFunc(matched, func(x, y entry) int { return cmp.Compare(x.a.User, y.a.User) })
	out.Total = len(matched)
	out.Pages = max(1, (len(matched)+q.PerPage-1)/q.PerPage)
	from := min((q.Page-1)*q.PerPage, len(matched))
	now := s.opts.Now()
	for _, e := range matched[from:min(from+q.PerPage, len(matched))] {
		out.Accounts = append(out.Accounts, s.row(e.a.User, e.c, e.sb, e.st, now))
	}
	s.fillFromLeader(ctx, out.Accounts)
	return out
}

// adminAccount is the row of user: the claim from the cache, its Sandbox
// read afresh (one account's page follows an action on it), or from the
// cache when the API server does not answer.
func (s *Server) adminAccount(ctx context.Context, user string) (accountRow, bool) {
	_, c, ok := s.claims.accountOf(user)
	if !ok {
		return accountRow{}, false
	}
	sb, err := s.claims.sandboxOf(ctx, c)
	switch {
	case errors.Is(err, ErrNoAccount):
		sb = nil
	case err != nil:
		sb = s.cachedSandbox(c)
	}
	rows := []accountRow{s.row(user, c, sb, stateOf(c, sb), s.opts.Now())}
	s.fillFromLeader(ctx, rows)
	return rows[0], true
}

// cachedSandbox is the Sandbox claim c is bound to, from the sweeper's
// cache; nil when it has none, or another claim's.
func (s *Server) cachedSandbox(c *extensions.SandboxClaim) *agents.Sandbox {
	sc, ok := s.opts.Activity.(sandboxCache)
	name := sandboxOf(c)
	if !ok || name == "" {
		return nil
	}
	sb, ok := sc.Sandbox(name)
	if !ok || !ownedBy(sb, c) {
		return nil
	}
	return sb
}

// row builds the row of user's claim c, bound to sb, in state st.
func (s *Server) row(user string, c *extensions.SandboxClaim, sb *agents.Sandbox, st string, now time.Time) accountRow {
	r := accountRow{User: user, State: st, Created: c.CreationTimestamp.UTC(), WakeSchedule: c.Annotations[account.AnnotationWakeSchedule]}
	if t := account.KeepAwakeUntil(c); t.After(now) {
		r.KeepAwakeUntil = &t
	}
	if n, ok := account.TokensPerDayOf(c); ok {
		r.EgressTokensPerDay = &n
	}
	if sb == nil {
		r.Why = whyNot(st, c.Status.Conditions)
		return r
	}
	r.Sandbox, r.Node = sb.Name, sb.Status.NodeName
	r.Why = whyNot(st, sb.Status.Conditions)
	r.ModelTokensToday = s.tokensToday(sb, now)
	if idle, ok := s.opts.Activity.(idleView); ok && st == StateReady {
		r.Activity = activityOf(idle.Idle(c, sb, now))
	}
	return r
}

// tokensToday is what sb's user used today through the egress listeners,
// nil where this replica does not know it.
func (s *Server) tokensToday(sb *agents.Sandbox, now time.Time) *int64 {
	u, ok := s.opts.Activity.(usageView)
	if !ok {
		return nil
	}
	n, ok := u.ModelTokensToday(sb, now)
	if !ok {
		return nil
	}
	return &n
}

// activityOf is the idle rule's view v as the admin views show it.
func activityOf(v sweeper.Suspension) *activityView {
	a := &activityView{Exact: v.Exact, Source: string(v.Reason)}
	if !v.LastActive.IsZero() {
		t := v.LastActive.UTC()
		a.LastActive = &t
	}
	if !v.At.IsZero() {
		t := v.At.UTC()
		a.SuspendsAt = &t
	}
	return a
}

// maxWhy bounds the controller's message on a row.
const maxWhy = 300

// whyNot says why an account in state st is not Ready: the Ready
// condition's reason and message, when it is not True.
func whyNot(st string, conds []metav1.Condition) string {
	if st == StateReady {
		return ""
	}
	c := meta.FindStatusCondition(conds, agents.ConditionReady)
	if c == nil || c.Status == metav1.ConditionTrue {
		return ""
	}
	why := c.Reason
	if c.Message != "" {
		why += ": " + c.Message
	}
	if len(why) > maxWhy {
		why = why[:maxWhy] + "…"
	}
	return why
}
