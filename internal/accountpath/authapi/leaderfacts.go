package authapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// accountFactsPath is where the sweep's leader tells another replica what
// only it knows of accounts: their activity and today's model tokens.
const accountFactsPath = "/internal/v1/replica/account-facts"

// Bounds of one account-facts call.
const (
	factsTimeout  = 2 * time.Second
	maxFactsBody  = 64 << 10
	maxFactsUsers = maxPerPage
)

// factsRequest names the accounts asked about.
type factsRequest struct {
	Users []string `json:"users"`
}

// accountFacts is what the leader knows of one account.
type accountFacts struct {
	Activity         *activityView `json:"activity,omitempty"`
	ModelTokensToday *int64        `json:"model_tokens_today,omitempty"`
	// Suspension is the idle rule's view of a Ready sandbox, for its
	// owner's account page.
	Suspension *sweeper.Suspension `json:"suspension,omitempty"`
}

// handleAccountFacts answers another replica, proven by a token only
// replicas can sign (replicaCall), with the leader's facts of the accounts
// it names: 503 where this replica does not lead.
func (s *Server) handleAccountFacts(w http.ResponseWriter, r *http.Request) {
	if _, err := s.replicaVerifier.Verify(bearer(r)); err != nil {
		s.fail(w, r, fmt.Errorf("%w: replica token: %w", ErrCallerUnauthenticated, err))
		return
	}
	var req factsRequest
	if err := readInternalJSON(w, r, maxFactsBody, &req, func() bool { return len(req.Users) <= maxFactsUsers },
		fmt.Sprintf(`{"users": ["<user>", ...]} (at most %d)`, maxFactsUsers)); err != nil {
		s.fail(w, r, err)
		return
	}
	if l, err := s.opts.Activity.Leader(); err != nil || !l.Self {
		s.fail(w, r, withRetryAfter(fmt.Errorf("account facts: %w: not the leader", ErrUnavailable), time.Second))
		return
	}
	out := make(map[string]accountFacts, len(req.Users))
	now := s.opts.Now()
	for _, user := range req.Users {
		_, c, ok := s.claims.accountOf(user)
		if !ok {
			continue
		}
		sb := s.cachedSandbox(c)
		if sb == nil {
			continue
		}
		f := accountFacts{ModelTokensToday: s.tokensToday(sb, now)}
		if idle, ok := s.opts.Activity.(idleView); ok && stateOf(c, sb) == StateReady {
			v := idle.Idle(c, sb, now)
			f.Activity, f.Suspension = activityOf(v), &v
		}
		out[user] = f
	}
	writeJSON(w, http.StatusOK, map[string]any{"accounts": out})
}

// fillFromLeader completes rows with the leader's facts when this replica
// does not lead the sweep: one call for all of them. Without an answer
// the rows keep what this replica knows, and say so (Activity.Exact).
func (s *Server) fillFromLeader(ctx context.Context, rows []accountRow) {
	var users []string
	for _, r := range rows {
		if r.Sandbox != "" {
			users = append(users, r.User)
		}
	}
	facts := s.leaderFacts(ctx, users)
	for i := range rows {
		if f, ok := facts[rows[i].User]; ok {
			rows[i].Activity, rows[i].ModelTokensToday = f.Activity, f.ModelTokensToday
		}
	}
}

// leaderSuspension is the leader's idle view of c's sandbox, for its
// owner's page on a replica that does not lead; local (what this replica
// knows) when the leader does not answer.
func (s *Server) leaderSuspension(ctx context.Context, c *extensions.SandboxClaim, local sweeper.Suspension) sweeper.Suspension {
	if c == nil {
		return local
	}
	a, err := account.FromClaim(c)
	if err != nil {
		return local
	}
	if f, ok := s.leaderFacts(ctx, []string{a.User})[a.User]; ok && f.Suspension != nil && f.Suspension.Exact {
		return *f.Suspension
	}
	return local
}

// leaderFacts asks the sweep's leader about users; nil when this replica
// leads, none is known, there is nothing to ask, or the leader does not
// answer (logged).
func (s *Server) leaderFacts(ctx context.Context, users []string) map[string]accountFacts {
	if s.opts.Activity == nil || len(users) == 0 {
		return nil
	}
	leader, err := s.opts.Activity.Leader()
	if err != nil || leader.Self || leader.Addr == "" {
		return nil
	}
	facts, err := s.askLeader(ctx, leader.Addr, factsRequest{Users: users})
	if err != nil {
		s.log.Warn("account facts from the leader", "leader", leader.Identity, "error", err)
		return nil
	}
	return facts
}

// askLeader posts req to the leader's internal listener at addr.
func (s *Server) askLeader(ctx context.Context, addr string, req factsRequest) (map[string]accountFacts, error) {
	token, _, err := s.keys.signAs(replicaCall, jwt.Claims{User: "replica"})
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, factsTimeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+accountFactsPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.opts.ForwardClient.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("leader answered %d", resp.StatusCode)
	}
	var out struct {
		Accounts map[string]accountFacts `json:"accounts"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("read the leader's answer: %w", err)
	}
	for user := range out.Accounts {
		if account.ValidateUser(user) != nil {
			delete(out.Accounts, user)
		}
	}
	return out.Accounts, nil
}
