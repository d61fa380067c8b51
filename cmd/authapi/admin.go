package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

const adminUsage = `Usage: authapi admin [flags] COMMAND [USER]

Runs the admin API of a sandgate deployment (docs/operations.md, "The admin
page and API") with an admin's bearer token: an account listed in the auth
API's ADMINS. The token comes from SANDGATE_ADMIN_TOKEN or --token-file
(never an argument, which other users of the machine can read), the
address from --url or SANDGATE_URL.

Commands:
  list [--state S] [--q TEXT] [--page N] [--per-page N]
                   accounts as a table (--json: the API's answer)
  show USER        one account and its recent audit events (JSON)
  suspend USER     suspend the agent; it wakes on the next request
  wake USER        wake the agent
  logout USER      end every session of USER (token and workspace stay)
  rotate USER      replace USER's token; prints the new one, once
  budget USER --tokens-per-day N
                   set USER's model tokens per UTC day through the egress
                   listener (0: no limit; default: the node proxies' limits)
  recreate USER --confirm USER
                   wipe USER's workspace and start afresh; prints the new token
  delete USER --confirm USER
                   delete USER, the agent and the workspace

Exits 0 on success, 1 when the API refuses or fails, 2 on usage errors.

Flags:
`

// adminCommands take a USER; the value says whether they need --confirm.
var adminCommands = map[string]bool{
	"show": false, "suspend": false, "wake": false, "logout": false, "rotate": false, "budget": false, "recreate": true, "delete": true,
}

// admin runs `authapi admin`.
func admin(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("authapi admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", getenv("SANDGATE_URL"), "the sandgate address, e.g. https://sandgate.example.com [SANDGATE_URL]")
	tokenFile := fs.String("token-file", "", "read the admin token from this file (\"-\": standard input) instead of SANDGATE_ADMIN_TOKEN")
	caFile := fs.String("ca-file", "", "trust this PEM CA bundle for the address's certificate, beside the system's")
	state := fs.String("state", "", "list: only accounts in this state (Ready, Waking, Suspended, Failed, Invalid, Missing)")
	query := fs.String("q", "", "list: only accounts whose user, node or sandbox contains this")
	page := fs.Int("page", 1, "list: the page")
	perPage := fs.Int("per-page", 100, "list: accounts per page (at most 500)")
	asJSON := fs.Bool("json", false, "list: print the API's JSON")
	confirm := fs.String("confirm", "", "recreate, delete: the user name again")
	perDay := fs.String("tokens-per-day", "", "budget: tokens per UTC day, 0 for no limit, or default")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long (a recreate waits for the new sandbox)")
	fs.Usage = func() {
		fmt.Fprint(stderr, adminUsage)
		fs.PrintDefaults()
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "authapi admin: "+format+"\n", a...)
		return 2
	}
	// Flags may follow the command and its user: parse in two rounds.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return 2
	}
	cmd, user, rest := rest[0], "", rest[1:]
	if _, ok := adminCommands[cmd]; ok && len(rest) > 0 {
		user, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	switch needs, ok := adminCommands[cmd]; {
	case !ok && cmd != "list":
		return usage("unknown command %q; see --help", cmd)
	case fs.NArg() > 0:
		return usage("unexpected %q", fs.Arg(0))
	case cmd == "list":
	case user == "":
		return usage("%s needs a USER", cmd)
	case needs && *confirm != user:
		return usage("%s destroys %s's workspace: repeat the user name with --confirm %s", cmd, user, user)
	case cmd == "budget" && *perDay == "":
		return usage("budget needs --tokens-per-day N (0: no limit) or --tokens-per-day default")
	}
	c, err := newAdminClient(*base, *caFile, *tokenFile, getenv, stdin)
	if err != nil {
		return usage("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var answer json.RawMessage
	switch cmd {
	case "list":
		v := url.Values{"page": {fmt.Sprint(*page)}, "per_page": {fmt.Sprint(*perPage)}}
		if *state != "" {
			v.Set("state", *state)
		}
		if *query != "" {
			v.Set("q", *query)
		}
		err = c.call(ctx, http.MethodGet, "/admin/accounts?"+v.Encode(), nil, &answer)
		if err == nil && !*asJSON {
			err = printAccounts(stdout, answer)
			return exitOf(stderr, err)
		}
	case "show":
		err = c.call(ctx, http.MethodGet, "/admin/accounts/"+url.PathEscape(user), nil, &answer)
	default:
		var body any
		switch {
		case adminCommands[cmd]:
			body = map[string]string{"confirm": *confirm}
		case cmd == "budget":
			body = map[string]string{"tokens_per_day": *perDay}
		}
		err = c.call(ctx, http.MethodPost, "/admin/accounts/"+url.PathEscape(user)+"/"+cmd, body, &answer)
	}
	if err == nil {
		_, err = fmt.Fprintf(stdout, "%s\n", answer)
	}
	return exitOf(stderr, err)
}

func exitOf(stderr io.Writer, err error) int {
	if err != nil {
		fmt.Fprintln(stderr, "authapi admin:", err)
		return 1
	}
	return 0
}

// adminClient calls the admin API with a bearer token.
type adminClient struct {
	base  *url.URL
	token string
	http  *http.Client
}

// newAdminClient checks the address (https, or http to this machine only:
// the token must not cross a network in the clear) and reads the token.
func newAdminClient(base, caFile, tokenFile string, getenv func(string) string, stdin io.Reader) (*adminClient, error) {
	u, err := url.Parse(base)
	if base == "" || err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("--url (or SANDGATE_URL) must be an address such as https://sandgate.example.com, not %q", base)
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !loopback(u.Hostname())) {
		return nil, fmt.Errorf("--url %s: use https (plain http only to this machine): the admin token must not cross a network in the clear", base)
	}
	token := getenv("SANDGATE_ADMIN_TOKEN")
	if tokenFile != "" {
		var b []byte
		if tokenFile == "-" {
			b, err = io.ReadAll(io.LimitReader(stdin, 4096))
		} else {
			b, err = os.ReadFile(tokenFile)
		}
		if err != nil {
			return nil, fmt.Errorf("read the admin token: %w", err)
		}
		token = string(b)
	}
	if token = strings.TrimSpace(token); token == "" {
		return nil, errors.New("no admin token: set SANDGATE_ADMIN_TOKEN or give --token-file")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read --ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	u.Path = ""
	return &adminClient{base: u, token: token, http: &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// maxAnswer bounds an answer of the admin API (a page of 500 accounts is
// far smaller).
const maxAnswer = 16 << 20

// call sends one request and decodes a 2xx answer into out; any other
// answer is an error with the API's message.
func (c *adminClient) call(ctx context.Context, method, path string, body any, out *json.RawMessage) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, req.URL.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = http.StatusText(resp.StatusCode)
		}
		return fmt.Errorf("%s %s: %d %s", method, req.URL.Path, resp.StatusCode, e.Error)
	}
	if !json.Valid(data) {
		return fmt.Errorf("%s %s: the answer is not JSON", method, req.URL.Path)
	}
	*out = data
	return nil
}

// printAccounts writes a list answer as a table.
func printAccounts(w io.Writer, answer json.RawMessage) error {
	var page struct {
		Accounts []struct {
			User, State, Why, Node string
			Created                time.Time
			Activity               *struct {
				LastActive *time.Time `json:"last_active"`
				Source     string
			}
		}
		Total, Page, Pages int
	}
	if err := json.Unmarshal(answer, &page); err != nil {
		return fmt.Errorf("read the account list: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tSTATE\tNODE\tLAST ACTIVE\tCREATED\tWHY")
	for _, a := range page.Accounts {
		last := "-"
		if a.Activity != nil && a.Activity.LastActive != nil {
			last = a.Activity.LastActive.UTC().Format(time.RFC3339) + " (" + a.Activity.Source + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.User, a.State, orDash(a.Node), last, a.Created.UTC().Format(time.RFC3339), orDash(a.Why))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	noun := "accounts"
	if page.Total == 1 {
		noun = "account"
	}
	_, err := fmt.Fprintf(w, "%d %s; page %d of %d\n", page.Total, noun, page.Page, page.Pages)
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
