package lifecycle

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/bench/load"
	"github.com/sandgate/sandgate/internal/accountpath/authapi"
)

// account is a signed-up user.
type account struct {
	user, cookie string
}

// signup is one signup's outcome.
type signup struct {
	account
	began time.Time
	took  time.Duration
	code  int
	err   error
}

// signups signs Signups users up at once against the auth API.
func (p *platform) signups(ctx context.Context, r *Result) ([]account, error) {
	done := make([]signup, Signups)
	var wg sync.WaitGroup
	for i := range Signups {
		wg.Go(func() { done[i] = p.signup(ctx, fmt.Sprintf("user%03d", i)) })
	}
	wg.Wait()
	accounts := make([]account, Signups)
	var pending []account
	for i, s := range done {
		switch {
		case s.err != nil:
			return nil, fmt.Errorf("signup %d: %w", i, s.err)
		case s.code != http.StatusCreated && s.code != http.StatusAccepted:
			return nil, fmt.Errorf("signup %d: status %d", i, s.code)
		case s.cookie == "":
			return nil, fmt.Errorf("signup %d: no session cookie", i)
		}
		accounts[i] = s.account
		if s.code == http.StatusAccepted {
			pending = append(pending, s.account)
		}
	}
	// A 202's account is watched until its claim is Ready (best effort:
	// the sweeper may suspend an idle one first).
	r.summariseSignups(done, p.readySince(ctx, pending))
	return accounts, nil
}

// signup signs user up and reads the session cookie it is given.
func (p *platform) signup(ctx context.Context, user string) signup {
	s := signup{account: account{user: user}, began: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.authURL+"/users", strings.NewReader(`{"user":"`+user+`"}`))
	if err != nil {
		s.err = fmt.Errorf("build request: %w", err)
		return s
	}
	req.Host = Host
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		s.err = err
		return s
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s.took, s.code = time.Since(s.began), resp.StatusCode
	for _, c := range resp.Cookies() {
		if c.Name == authapi.DefaultCookieName {
			s.cookie = c.Name + "=" + c.Value
		}
	}
	return s
}

// summariseSignups sets the signup figures of r. A 201 means Ready at
// answer time; a 202's account is Ready when seen says, counted from
// its own signup's start.
func (r *Result) summariseSignups(done []signup, seen map[string]time.Time) {
	var created, answered, ready []time.Duration
	for _, s := range done {
		answered = append(answered, s.took)
		if s.code == http.StatusCreated {
			created = append(created, s.took)
			ready = append(ready, s.took)
		} else if t, ok := seen[s.user]; ok {
			ready = append(ready, t.Sub(s.began))
		}
	}
	r.Created = len(created)
	r.Signup = load.Summarise(created)
	r.Answered = load.Summarise(answered)
	r.Ready = load.Summarise(ready)
}
