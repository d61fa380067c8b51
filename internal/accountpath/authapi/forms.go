package authapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sandgate/sandgate/internal/account"
)

// userRule says which user names signup takes: beside the field, in its
// pattern's title (what the browser says when the pattern fails) and in
// the server's own refusal.
const userRule = "A user name has 1 to 40 characters: lowercase letters (a to z), digits and hyphens, starting with a letter and ending with a letter or digit."

// formState is a signup or sign-in form as a refusal shows it again: the
// name typed (never a token or an invite code) and a message beside the
// field it concerns.
type formState struct {
	User string
	// Field is the input Message concerns: "user", "invite" or "token".
	Field, Message string
}

// refuseSignup answers a browser's refused signup form with the landing
// page again, the name kept and the reason beside its field, with the
// refusal's status. A name that is taken is also filled into the sign-in
// form. Refusals of the request rather than of what was typed (a
// cross-site form, too large a body, the API server down) get their error
// page, and API clients their JSON, as fail gives them.
func (s *Server) refuseSignup(w http.ResponseWriter, r *http.Request, err error, in input) {
	d := s.anonymousPage(r, "")
	switch sso, _ := s.proxyUser(r); {
	case !browser(r) || !isForm(r):
		s.fail(w, r, err)
		return
	case errors.Is(err, account.ErrInvalidUser):
		d.Signup = formState{User: in.User, Field: "user", Message: userAdvice(in.User)}
	case errors.Is(err, ErrExists):
		d.Signup = formState{User: in.User, Field: "user", Message: fmt.Sprintf("The name “%s” is taken. If it is yours, sign in below with your access token; if not, choose another name.", in.User)}
		d.Login.User = in.User
	case errors.Is(err, ErrBadInvite):
		d.Signup = formState{User: in.User, Field: "invite", Message: "That invite code is not valid. Ask the people who run this service for the current one."}
	case errors.Is(err, ErrForbidden) && sso != "":
		d.Signup = formState{User: in.User, Field: "user", Message: fmt.Sprintf("You are signed in through your organisation as %s, so your account can only be “%s”.", sso, sso)}
	default:
		s.fail(w, r, err)
		return
	}
	code, _, _ := s.refused(w, r, err)
	s.renderPage(w, r, code, d)
}

// refuseLogin answers a browser's refused sign-in form with the landing
// page again: the name and the deep link kept, the token field empty with
// the reason beside it, status 401. The message is the same whether the
// user, the token or both are wrong, as the JSON answer is.
func (s *Server) refuseLogin(w http.ResponseWriter, r *http.Request, err error, in input) {
	if !browser(r) || !isForm(r) || !errors.Is(err, ErrBadCredentials) {
		s.fail(w, r, err)
		return
	}
	d := s.anonymousPage(r, in.Next)
	d.Login = formState{User: in.User, Field: "token", Message: "This user name and access token do not open an account. Check both: the token is the long text shown once when the account was made or its token last replaced. Lost it? Where you are still signed in, replace it on your account page; otherwise ask the people who run this service."}
	code, _, _ := s.refused(w, r, err)
	s.renderPage(w, r, code, d)
}

// userAdvice explains, for people, why account.ValidateUser refused name;
// the rule itself stands beside the field.
func userAdvice(name string) string {
	lower := strings.ToLower(name)
	switch {
	case name == "":
		return "Enter a user name."
	case len(name) > account.MaxUserLen:
		return fmt.Sprintf("That name has %d characters, more than %d.", len(name), account.MaxUserLen)
	case lower != name && account.ValidateUser(lower) == nil:
		return fmt.Sprintf("User names are lowercase: “%s” would do.", lower)
	case strings.ContainsFunc(name, func(c rune) bool { return (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' }):
		return "A user name can only have lowercase letters (a to z), digits and hyphens: no spaces, dots, capitals or other signs."
	case name[0] < 'a' || name[0] > 'z':
		return "A user name starts with a letter (a to z)."
	case strings.HasSuffix(name, "-"):
		return "A user name ends with a letter or a digit, not a hyphen."
	}
	return fmt.Sprintf("“%s” is reserved for the service itself: choose another name.", name)
}
