package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// Limits is one user's budget; zero means no limit of that kind.
type Limits struct {
	RequestsPerMinute int   `json:"requests_per_minute"`
	TokensPerDay      int64 `json:"tokens_per_day"`
}

// LimitsFile is the limits file's content: a default for every user and
// overrides per user. Either may set one field and leave the other to the
// level below (user, then file default, then Options.Default).
type LimitsFile struct {
	Default *partialLimits            `json:"default"`
	Users   map[string]*partialLimits `json:"users"`
}

type partialLimits struct {
	RequestsPerMinute *int   `json:"requests_per_minute"`
	TokensPerDay      *int64 `json:"tokens_per_day"`
}

var userName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ParseLimits reads a limits file (JSON) and reports every problem at once.
func ParseLimits(data []byte) (LimitsFile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f LimitsFile
	if err := dec.Decode(&f); err != nil {
		return LimitsFile{}, fmt.Errorf("parse limits: %w", err)
	}
	if dec.More() {
		return LimitsFile{}, errors.New("parse limits: trailing data")
	}
	var errs []error
	if err := f.Default.validate(); err != nil {
		errs = append(errs, fmt.Errorf("default: %w", err))
	}
	for u, l := range f.Users {
		if !userName.MatchString(u) {
			errs = append(errs, fmt.Errorf("user %q is not a user name", u))
		}
		if err := l.validate(); err != nil {
			errs = append(errs, fmt.Errorf("user %q: %w", u, err))
		}
	}
	if len(errs) > 0 {
		return LimitsFile{}, errors.Join(errs...)
	}
	return f, nil
}

func (p *partialLimits) validate() error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.RequestsPerMinute != nil && (*p.RequestsPerMinute < 0 || *p.RequestsPerMinute > 1_000_000) {
		errs = append(errs, errors.New("requests_per_minute must be 0-1000000"))
	}
	if p.TokensPerDay != nil && *p.TokensPerDay < 0 {
		errs = append(errs, errors.New("tokens_per_day must not be negative"))
	}
	return errors.Join(errs...)
}

func (p *partialLimits) over(l Limits) Limits {
	if p == nil {
		return l
	}
	if p.RequestsPerMinute != nil {
		l.RequestsPerMinute = *p.RequestsPerMinute
	}
	if p.TokensPerDay != nil {
		l.TokensPerDay = *p.TokensPerDay
	}
	return l
}

// For returns user's limits: the user's entry over the file's default over
// base.
func (f LimitsFile) For(user string, base Limits) Limits {
	return f.Users[user].over(f.Default.over(base))
}
