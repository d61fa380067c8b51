// Package settings fills a command's configuration from defaults, then
// environment variables (the seed gateway's names), then flags, keeping
// unparsable values as problems for the command's Validate to report all at
// once.
package settings

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/buildinfo"
)

// Setting ties a flag to its environment variable.
type Setting struct {
	Flag, Env, Help string
	Value           flag.Value
}

// Var declares a setting whose value lands in v.
func Var(flagName, env, help string, v flag.Value) Setting {
	return Setting{Flag: flagName, Env: env, Help: help, Value: v}
}

// Kubeconfig declares the cluster access setting every command that talks
// to the API server takes, landing in p.
func Kubeconfig(p *string) Setting {
	return Var("kubeconfig", "KUBECONFIG", "kubeconfig file; empty uses the in-cluster ServiceAccount", String(p))
}

// ErrVersion is what Load returns for --version, after printing the build
// to out.
var ErrVersion = errors.New("version requested")

// Load applies getenv then args to list. It returns the environment values
// that did not parse, and that no flag set instead, as problems, and an
// error only for flag syntax errors, stray arguments, --help (flag.ErrHelp,
// after calling usage) and --version (ErrVersion, after printing the build
// to out).
func Load(name string, list []Setting, args []string, getenv func(string) string, out io.Writer, usage func()) ([]error, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	version := fs.Bool("version", false, "print the version, revision and Go version, then exit")
	envProblems := map[string]error{} // by flag name
	for _, s := range list {
		if v := getenv(s.Env); v != "" {
			if err := s.Value.Set(v); err != nil {
				envProblems[s.Flag] = fmt.Errorf("%s=%q: %w", s.Env, v, err)
			}
		}
		fs.Var(s.Value, s.Flag, s.Help)
	}
	fs.Usage = usage
	err := fs.Parse(args)
	fs.Visit(func(f *flag.Flag) { delete(envProblems, f.Name) })
	var problems []error
	for _, s := range list {
		if p := envProblems[s.Flag]; p != nil {
			problems = append(problems, p)
		}
	}
	if err != nil {
		return problems, err
	}
	if *version {
		fmt.Fprintf(out, "%s %s\n", name, buildinfo.Read())
		return nil, ErrVersion
	}
	if fs.NArg() > 0 {
		return problems, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return problems, nil
}

// Parse parses args into fs, for commands that declare plain flags; an
// argument left over after the flags is an error.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// Usage writes one entry per setting, flag and environment variable together.
func Usage(w io.Writer, list []Setting) {
	for _, s := range list {
		def := s.Value.String()
		fmt.Fprintf(w, "  --%s [%s]\n        %s", s.Flag, s.Env, s.Help)
		if def != "" {
			fmt.Fprintf(w, " (default %s)", def)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  --version\n        print the version, revision and Go version, then exit\n")
}

// SplitList splits a comma-separated list, dropping empty entries.
func SplitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// Prefixes parses a comma-separated list of CIDRs or single addresses; env
// names the variable in errors.
func Prefixes(env, list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for _, s := range SplitList(list) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				errs = append(errs, fmt.Errorf("%s entry %q is not a CIDR or address", env, s))
				continue
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, errors.Join(errs...)
}

// Level parses a log level name.
func Level(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("LOG_LEVEL %q is not debug, info, warn or error", s)
	}
	return l, nil
}

type (
	stringValue   string
	boolValue     bool
	intValue      int
	durationValue time.Duration
)

// String makes a string field a setting value.
func String(p *string) flag.Value { return (*stringValue)(p) }

// Bool makes a bool field a setting value; --flag alone means true.
func Bool(p *bool) flag.Value { return (*boolValue)(p) }

// Int makes an int field a setting value.
func Int(p *int) flag.Value { return (*intValue)(p) }

// Duration makes a duration field a setting value that takes Go durations
// ("90s") or bare seconds ("90", "0.5"), as the seed's variables are written.
func Duration(p *time.Duration) flag.Value { return (*durationValue)(p) }

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }

func (v *boolValue) Set(s string) error {
	return set((*bool)(v), strconv.ParseBool, s, "not a boolean")
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }

func (v *intValue) Set(s string) error { return set((*int)(v), strconv.Atoi, s, "not an integer") }
func (v *intValue) String() string     { return strconv.Itoa(int(*v)) }

// set stores in p what parse makes of s, surrounding space trimmed; when
// parse fails the error is msg alone: Load already quotes the input.
func set[T any](p *T, parse func(string) (T, error), s, msg string) error {
	v, err := parse(strings.TrimSpace(s))
	if err != nil {
		return errors.New(msg)
	}
	*p = v
	return nil
}

// maxSeconds bounds a bare number of seconds to what a time.Duration holds
// (about 292 years).
const maxSeconds = float64(math.MaxInt64) / float64(time.Second)

func (v *durationValue) Set(s string) error {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(n) || math.Abs(n) >= maxSeconds {
			return errors.New("not a number of seconds a duration can hold")
		}
		*v = durationValue(time.Duration(n * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration or a number of seconds")
	}
	*v = durationValue(d)
	return nil
}
func (v *durationValue) String() string { return time.Duration(*v).String() }
