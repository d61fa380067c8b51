// Command mockoidc-standin is a STAND-IN for an OpenID Connect provider, for
// tests only: github.com/oauth2-proxy/mockoidc signs every authorization
// request in as the next queued user without asking anyone. It prints one
// JSON line with its issuer and control URL once it listens; POST a user
// ({"sub","email","preferred_username","groups"}) to the control URL to queue who
// the next sign-in is.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/oauth2-proxy/mockoidc"
)

type queuedUser struct {
	Subject           string   `json:"sub"`
	Email             string   `json:"email"`
	PreferredUsername string   `json:"preferred_username"`
	Groups            []string `json:"groups"`
}

type ready struct {
	Issuer  string `json:"issuer"`
	Control string `json:"control"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address of the provider")
	control := flag.String("control-addr", "127.0.0.1:0", "listen address of the user queue (POST /users)")
	clientID := flag.String("client-id", "sandgate", "the only client ID accepted")
	clientSecret := flag.String("client-secret", "", "the client secret (required)")
	flag.Parse()
	if err := run(*addr, *control, *clientID, *clientSecret); err != nil {
		fmt.Fprintln(os.Stderr, "mockoidc-standin:", err)
		os.Exit(1)
	}
}

func run(addr, control, clientID, clientSecret string) error {
	if clientSecret == "" {
		return fmt.Errorf("--client-secret is required")
	}
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		return fmt.Errorf("create provider: %w", err)
	}
	m.ClientID, m.ClientSecret = clientID, clientSecret
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if err := m.Start(ln, nil); err != nil {
		return fmt.Errorf("start provider: %w", err)
	}
	cln, err := net.Listen("tcp", control)
	if err != nil {
		return fmt.Errorf("listen for control: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /users", func(w http.ResponseWriter, r *http.Request) {
		var u queuedUser
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&u); err != nil || u.Subject == "" {
			http.Error(w, "want a JSON user with a sub", http.StatusBadRequest)
			return
		}
		m.QueueUser(&mockoidc.MockUser{Subject: u.Subject, Email: u.Email, EmailVerified: true, PreferredUsername: u.PreferredUsername, Groups: u.Groups})
		w.WriteHeader(http.StatusNoContent)
	})
	go func() { _ = http.Serve(cln, mux) }()
	if err := json.NewEncoder(os.Stdout).Encode(ready{Issuer: m.Issuer(), Control: "http://" + cln.Addr().String() + "/users"}); err != nil {
		return fmt.Errorf("print readiness: %w", err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return m.Shutdown()
}
