package authapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/sandgate/sandgate/internal/account"
)

// adminResult is what an admin action did.
type adminResult struct {
	User   string `json:"user"`
	Action string `json:"action"`
	// Token is the account's new bearer token (rotate, recreate), for the
	// admin to hand over; it is shown once.
	Token string `json:"token,omitempty"`
	// State is the account's state afterwards.
	State string `json:"state"`
}

// adminAction does one action on user's account; token is a new bearer
// token it gave the account, if any.
type adminAction func(s *Server, r *http.Request, user string, in input) (token string, err error)

// adminActions are the admin API's actions by name, each at
// POST /admin/accounts/{user}/<name>.
var adminActions = map[string]adminAction{
	"suspend": func(s *Server, r *http.Request, user string, _ input) (string, error) {
		return "", s.suspendAgent(r, user, "an admin")
	},
	"wake": func(s *Server, r *http.Request, user string, _ input) (string, error) {
		_, c, ok := s.claims.accountOf(user)
		if !ok {
			return "", fmt.Errorf("%w: user %s", ErrNoAccount, user)
		}
		patched, err := s.wakeSandbox(r.Context(), c)
		noteAudit(r, "sandbox", sandboxOf(c), "result", map[bool]string{true: "patched", false: "running"}[patched])
		return "", err
	},
	"logout": func(s *Server, r *http.Request, user string, _ input) (string, error) {
		if _, err := s.claims.raiseEpoch(r.Context(), user, nil); err != nil {
			return "", err
		}
		s.opts.Metrics.Revocations.WithLabelValues("everywhere").Inc()
		return "", nil
	},
	"rotate": func(s *Server, r *http.Request, user string, _ input) (string, error) {
		token := newBearerToken()
		hash := account.HashToken(token)
		if _, err := s.claims.raiseEpoch(r.Context(), user, &hash); err != nil {
			return "", err
		}
		s.opts.Metrics.Revocations.WithLabelValues("rotate").Inc()
		return token, nil
	},
	"recreate": func(s *Server, r *http.Request, user string, in input) (string, error) {
		if in.Confirm != user {
			return "", ErrNotConfirmed
		}
		a, _, ok := s.claims.accountOf(user)
		if !ok {
			return "", fmt.Errorf("%w: user %s", ErrNoAccount, user)
		}
		token := newBearerToken()
		if _, err := s.recreate(r.Context(), a, account.HashToken(token)); err != nil {
			return "", err
		}
		s.opts.Metrics.Revocations.WithLabelValues("recreate").Inc()
		return token, nil
	},
	"budget": func(s *Server, r *http.Request, user string, in input) (string, error) {
		value := strings.TrimSpace(in.TokensPerDay)
		if value == "default" {
			value = ""
		} else if _, err := account.ParseTokensPerDay(value); err != nil {
			return "", badRequest("%v, or default", err)
		}
		noteAudit(r, "tokens_per_day", in.TokensPerDay)
		return "", s.claims.setAnnotation(r.Context(), user, account.AnnotationEgressTokensPerDay, value)
	},
	"delete": func(s *Server, r *http.Request, user string, in input) (string, error) {
		if in.Confirm != user {
			return "", ErrNotConfirmed
		}
		if _, _, ok := s.claims.accountOf(user); !ok {
			return "", fmt.Errorf("%w: user %s", ErrNoAccount, user)
		}
		if err := s.deleteAccount(r.Context(), user); err != nil {
			return "", err
		}
		s.opts.Metrics.Revocations.WithLabelValues("delete").Inc()
		return "", nil
	},
}

// handleAdminAction runs the named action on the account in the path for
// an admin, and writes the audit event naming both. The API gets
// adminResult; a browser gets the account's page again, or the new token
// on a page of its own.
func (s *Server) handleAdminAction(name string) http.HandlerFunc {
	do := adminActions[name]
	return func(w http.ResponseWriter, r *http.Request) {
		user := r.PathValue("user")
		noteActor(r, user, authNone)
		in, err := s.readInput(w, r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		ad, err := s.adminOf(w, r, in)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		noteActor(r, user, ad.auth)
		auditOf(r).admin = ad.user
		if err := account.ValidateUser(user); err != nil {
			s.fail(w, r, invalidUser(err))
			return
		}
		token, err := do(s, r, user, in)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.log.Info("admin action", "action", name, "user", user, "admin", ad.user)
		switch {
		case ad.auth != authSession:
			writeJSON(w, http.StatusOK, adminResult{User: user, Action: name, Token: token, State: s.claims.state(r.Context(), s.claims.get(user))})
		case token != "":
			row, _ := s.adminAccount(r.Context(), user)
			s.renderAdmin(w, r, "New access token for "+user, "admin_token", adminPage{Admin: ad.user, Account: &row, Token: token, Done: name})
		case name == "delete":
			seeOther(w, r, "/admin/accounts?"+url.Values{"q": {user}}.Encode())
		default:
			seeOther(w, r, "/admin/accounts/"+user+"?done="+name)
		}
	}
}
