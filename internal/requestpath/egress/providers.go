package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// Provider is one upstream model API.
type Provider struct {
	// Name is the first path segment sandboxes call it by: /<name>/....
	Name string `json:"name"`
	// BaseURL is where calls go: /<name>/chat/completions is sent to
	// BaseURL + "/chat/completions".
	BaseURL string `json:"base_url"`
	// Header carries the key (Authorization, x-api-key, api-key).
	Header string `json:"header"`
	// Prefix goes before the key in Header ("Bearer ").
	Prefix string `json:"prefix"`
	// Key names the shared key's file in the keys directory (the Secret's
	// key); a file named Key + "." + user, when present, wins for that user.
	Key string `json:"key"`
	// Paths are the allowed paths below BaseURL: exact, or every path
	// under one that ends in "/" (model listing only). Each takes one
	// method, by its last segment (kindOf).
	Paths []string `json:"paths"`
	// Headers are the request headers sent on besides Content-Type and
	// Accept (for example anthropic-version); any other is dropped.
	Headers []string `json:"headers"`
	// MaxOutputTokens is the most a call may generate (the largest
	// output of the provider's models): what a call that names no smaller
	// max_tokens reserves of its user's budget until its usage arrives.
	MaxOutputTokens int64 `json:"max_output_tokens"`
}

// DefaultMaxOutputTokens is MaxOutputTokens when a provider sets none:
// the largest output of OpenAI's and Anthropic's current models.
const DefaultMaxOutputTokens = 128_000

// kind is what a path does, and so the one method it takes.
type kind int

const (
	kindNone     kind = iota
	kindGenerate      // POST: a completion, a response, a message
	kindEmbed         // POST: embeddings
	kindModels        // GET: the model list, or one model
)

// method is the one method a path of kind k takes.
func (k kind) method() string {
	if k == kindModels {
		return "GET"
	}
	return "POST"
}

// kindOf names what an allow-list entry does by its last segment:
// .../completions, .../responses and .../messages generate, .../embeddings
// embeds, .../models (or everything under .../models/) lists models.
// Anything else, such as /files, /batches or /conversations, is no kind
// and cannot be allowed.
func kindOf(path string) kind {
	prefix := strings.HasSuffix(path, "/")
	last := path[strings.LastIndexByte(strings.TrimSuffix(path, "/"), '/')+1:]
	last = strings.TrimSuffix(last, "/")
	switch {
	case last == "models":
		return kindModels
	case prefix:
		return kindNone
	case last == "completions" || last == "responses" || last == "messages":
		return kindGenerate
	case last == "embeddings":
		return kindEmbed
	}
	return kindNone
}

// DefaultOpenAIPaths are the OpenAI-compatible paths allowed when a
// provider lists none.
var DefaultOpenAIPaths = []string{"/chat/completions", "/completions", "/embeddings", "/responses", "/models", "/models/"}

var (
	providerName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}$`)
	keyName      = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)
	headerName   = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
	allowedPath  = regexp.MustCompile(`^(/[A-Za-z0-9._~:@-]+)+/?$`)
)

// ParseProviders reads a JSON list of providers, fills defaults (header
// Authorization with prefix "Bearer ", key = name, the OpenAI paths) and
// reports every problem at once.
func ParseProviders(data []byte) ([]Provider, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ps []Provider
	if err := dec.Decode(&ps); err != nil {
		return nil, fmt.Errorf("parse providers: %w", err)
	}
	if dec.More() {
		return nil, errors.New("parse providers: trailing data after the list")
	}
	if len(ps) == 0 {
		return nil, errors.New("parse providers: empty list")
	}
	var errs []error
	seen := map[string]bool{}
	for i := range ps {
		p := &ps[i]
		p.fill()
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("provider %q: listed twice", p.Name))
		}
		seen[p.Name] = true
		if err := p.validate(); err != nil {
			errs = append(errs, fmt.Errorf("provider %d (%q): %w", i, p.Name, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ps, nil
}

func (p *Provider) fill() {
	if p.Header == "" {
		p.Header, p.Prefix = "Authorization", "Bearer "
	}
	if p.Key == "" {
		p.Key = p.Name
	}
	if len(p.Paths) == 0 {
		p.Paths = DefaultOpenAIPaths
	}
	if p.MaxOutputTokens == 0 {
		p.MaxOutputTokens = DefaultMaxOutputTokens
	}
	p.BaseURL = strings.TrimSuffix(p.BaseURL, "/")
}

func (p Provider) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !providerName.MatchString(p.Name) {
		bad("name must be a lowercase letter, then up to 30 lowercase letters, digits or '-'")
	}
	if _, err := p.upstream(); err != nil {
		errs = append(errs, err)
	}
	if !headerName.MatchString(p.Header) {
		bad("header %q is not a header name", p.Header)
	}
	if strings.ContainsAny(p.Prefix, "\r\n\x00") || len(p.Prefix) > 32 {
		bad("prefix must be at most 32 characters on one line")
	}
	if !keyName.MatchString(p.Key) {
		bad("key %q must be letters, digits, '_' or '-' (no '.': user keys are <key>.<user>)", p.Key)
	}
	for _, path := range p.Paths {
		if !allowedPath.MatchString(path) || hasDotSegment(path) {
			bad("path %q must be /segment[/segment...] without dot segments, escapes or a query", path)
		} else if kindOf(path) == kindNone {
			bad("path %q must end in /completions, /responses, /messages, /embeddings or /models (or be /models/ and under): no other path is served", path)
		}
	}
	if p.MaxOutputTokens < 1 || p.MaxOutputTokens > 100_000_000 {
		bad("max_output_tokens %d must be 1-100000000", p.MaxOutputTokens)
	}
	for _, h := range p.Headers {
		if !headerName.MatchString(h) || isHopHeader(h) {
			bad("header %q cannot be sent on", h)
		}
	}
	return errors.Join(errs...)
}

// upstream is the parsed BaseURL: http or https, a host, a path, nothing
// else.
func (p Provider) upstream() (*url.URL, error) {
	u, err := url.Parse(p.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("base_url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || hasDotSegment(u.Path) ||
		strings.ContainsAny(u.Path, "%?#") {
		return nil, fmt.Errorf("base_url %q must be http(s)://host[:port][/path] without credentials, query or fragment", p.BaseURL)
	}
	if _, port, err := net.SplitHostPort(u.Host); err == nil && port == "" {
		return nil, fmt.Errorf("base_url %q has an empty port", p.BaseURL)
	}
	return u, nil
}

// allows returns what path (below BaseURL) does: the kind of the
// allow-list entry it matches, kindNone when it matches none.
func (p Provider) allows(path string) kind {
	if !allowedPath.MatchString(path) || hasDotSegment(path) {
		return kindNone
	}
	for _, a := range p.Paths {
		if path == a || strings.HasSuffix(a, "/") && strings.HasPrefix(path, a) {
			return kindOf(a)
		}
	}
	return kindNone
}

func hasDotSegment(path string) bool {
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// isHopHeader names headers a proxy never forwards, or that carry
// credentials or routing.
func isHopHeader(h string) bool {
	switch strings.ToLower(h) {
	case "connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "te", "trailer",
		"transfer-encoding", "upgrade", "host", "content-length", "authorization", "x-api-key", "api-key",
		"cookie", "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "accept-encoding":
		return true
	}
	return false
}
