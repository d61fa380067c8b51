package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sandgate/sandgate/internal/settings"
	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
)

// Options is every setting of agent-standin, from its arguments and the
// environment variables DSH Web reads.
type Options struct {
	// Host and Port are where the app listens (--host, --port).
	Host string
	Port int
	// DataDir is DSH_HOME, or $HOME/.dsh without it: the conversation log
	// and the workspace live there.
	DataDir string
	// TrustedHosts is DSH_TRUSTED_HOSTS, comma-separated.
	TrustedHosts []string
	// TokenFile is --token-file, or DSH_TOKEN_FILE without it: where the
	// app also writes its launch token, for node proxies reading it with
	// TOKEN_SOURCE=file. Empty writes none.
	TokenFile string
}

// Defaults returns DSH Web's defaults: loopback, port 3080.
func Defaults() Options {
	return Options{Host: "127.0.0.1", Port: 3080}
}

// load reads `web [--host H] [--port P] [--token-file F]` and the
// environment over Defaults. It returns flag.ErrHelp after printing the
// usage for --help.
func load(args []string, getenv func(string) string, usageOut io.Writer) (Options, error) {
	o := Defaults()
	if home := getenv("DSH_HOME"); home != "" {
		o.DataDir = home
	} else if home := getenv("HOME"); home != "" {
		o.DataDir = filepath.Join(home, ".dsh")
	}
	o.TrustedHosts = settings.SplitList(getenv("DSH_TRUSTED_HOSTS"))
	o.TokenFile = getenv("DSH_TOKEN_FILE")

	fs := flag.NewFlagSet("agent-standin web", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	fs.Usage = func() { usage(usageOut, fs) }
	fs.StringVar(&o.Host, "host", o.Host, "address to listen on; 0.0.0.0 in a pod")
	fs.IntVar(&o.Port, "port", o.Port, "port to listen on; 0 picks a free one")
	fs.StringVar(&o.TokenFile, "token-file", o.TokenFile, "also write the launch token to this file (mode 0600), e.g. in an emptyDir volume; overrides DSH_TOKEN_FILE")
	if len(args) == 0 || args[0] != "web" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fs.Usage()
			return o, flag.ErrHelp
		}
		return o, errors.New(`the only command is "web" (try --help)`)
	}
	return o, settings.Parse(fs, args[1:])
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: agent-standin web [--host HOST] [--port PORT] [--token-file FILE]

A STAND-IN for DSH Web, the agent web app of sandgate's sandbox pods, for
test clusters without the real app: sandgate's simulated agent app
(internal/testing/sim/agentapp) as a container process. It prints
"dsh web: listening on http://<host>:<port>/?token=<token>" to stdout, answers
/favicon.svg without auth for probes, refuses Host headers other than
localhost, 127.0.0.1 and DSH_TRUSTED_HOSTS with 400, and stops on SIGTERM.
With --token-file it first writes the token to that file as well.

Flags:
`)
	fs.PrintDefaults()
	fmt.Fprint(w, `
Environment:
  DSH_HOME           data directory (conversation log, workspace/); default $HOME/.dsh
  HOME               used for DSH_HOME's default
  DSH_TRUSTED_HOSTS  comma-separated Host names accepted besides localhost and 127.0.0.1
  DSH_TOKEN_FILE     like --token-file
`)
}

// app returns the agent app for o, its console on stdout and stderr.
func (o Options) app(stdout, stderr io.Writer) *agentapp.App {
	return agentapp.New(o.appOptions(stdout, stderr))
}

func (o Options) appOptions(stdout, stderr io.Writer) agentapp.Options {
	a := agentapp.Defaults()
	a.Stdout, a.Stderr = stdout, stderr
	a.DataDir = o.DataDir
	a.TrustedHosts = o.TrustedHosts
	a.TokenFile = o.TokenFile
	return a
}

// Validate reports every problem in o at once. It changes nothing.
func (o Options) Validate() error {
	var errs []error
	if o.Host == "" {
		errs = append(errs, errors.New("--host must not be empty"))
	}
	if o.Port < 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port %d is out of range", o.Port))
	}
	a := o.appOptions(nil, nil)
	if a.DataDir == "" {
		errs = append(errs, errors.New("set DSH_HOME (or HOME) to the data directory"))
		a.DataDir = "." // reported above; the app checks the rest
	}
	if err := a.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
