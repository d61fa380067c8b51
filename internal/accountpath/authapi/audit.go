package authapi

import (
	"context"
	"log/slog"
	"net/http"
)

// Audit actions, one per account-changing route; docs/audit.md lists the
// event schema. The sweeper writes "suspend" with the same keys.
var auditActions = map[string]string{
	"signup":   "signup",
	"login":    "login",
	"logout":   "logout",
	"rotate":   "token_rotate",
	"recreate": "recreate",
	"delete":   "delete",
	"wake":     "wake",

	"logout_everywhere": "logout_everywhere",

	"admin_suspend":  "suspend_now",
	"admin_wake":     "wake",
	"admin_logout":   "logout_everywhere",
	"admin_rotate":   "token_rotate",
	"admin_recreate": "recreate",
	"admin_delete":   "delete",
	"admin_budget":   "egress_budget",
}

// How the actor of an audited request proved who it is.
const (
	authNone    = "none"    // nothing yet: a signup
	authToken   = "token"   // a bearer token
	authSession = "session" // a session cookie
	authSSO     = "sso"     // the SSO proxy's AUTH_PROXY_HEADER
	authCaller  = "service_account"
)

// auditEvent collects what a handler learns about the account it acts on;
// route writes it as one line after the response.
type auditEvent struct {
	user   string
	auth   string
	admin  string // the admin who acted on user's account, if one did
	reason string // statusOf's reason when the request failed
	attrs  []any
}

type auditKey struct{}

// auditOf returns the request's audit event, or a throwaway one for a route
// that is not audited.
func auditOf(r *http.Request) *auditEvent {
	if ev, ok := r.Context().Value(auditKey{}).(*auditEvent); ok {
		return ev
	}
	return &auditEvent{}
}

// noteActor records the account a request acts on and how it was
// authenticated; a later call wins.
func noteActor(r *http.Request, user, auth string) {
	ev := auditOf(r)
	ev.user, ev.auth = user, auth
}

// noteAudit adds attributes (never a secret) to the request's audit event.
func noteAudit(r *http.Request, attrs ...any) {
	ev := auditOf(r)
	ev.attrs = append(ev.attrs, attrs...)
}

// withAudit gives r an audit event when route name is audited.
func withAudit(r *http.Request, name string) (*http.Request, *auditEvent) {
	if _, ok := auditActions[name]; !ok {
		return r, nil
	}
	ev := &auditEvent{}
	return r.WithContext(context.WithValue(r.Context(), auditKey{}, ev)), ev
}

// auditLogger is the stream audit events go to: Options.Audit (else the
// main logger), every line marked log=audit with this replica's name, so
// a log pipeline can route it apart from the access log.
func auditLogger(o Options) *slog.Logger {
	l := o.Audit
	if l == nil {
		l = o.Logger
	}
	return l.With("log", "audit", "replica", o.Replica)
}

// writeAudit writes the one audit line of an audited request: the action,
// the account, the client, the outcome ("ok" or statusOf's reason) and the
// status. It holds no token, cookie or JWT.
func (s *Server) writeAudit(r *http.Request, name string, ev *auditEvent, status int) {
	outcome := "ok"
	if status >= 400 {
		outcome = ev.reason
		if outcome == "" {
			outcome = http.StatusText(status)
		}
	}
	attrs := []any{
		"action", auditActions[name], "user", ev.user, "auth", ev.auth,
		"client", clientAddr(r, s.opts.TrustedProxies).String(), "outcome", outcome, "status", status,
	}
	if ev.admin != "" {
		attrs = append(attrs, "admin", ev.admin)
	}
	s.audit.Log(r.Context(), slog.LevelInfo, "audit", append(attrs, ev.attrs...)...)
	s.recent.add(ev.user, auditRecord{
		Time: s.opts.Now().UTC(), Action: auditActions[name], Auth: ev.auth, Admin: ev.admin, Outcome: outcome, Status: status,
	})
}
