package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/sandgate/sandgate/internal/settings"
)

// Options is every setting of sandgate-images, from its flags.
type Options struct {
	// BinDir holds the static binaries, named after their images.
	BinDir string
	// OutDir receives one <name>.tar per image.
	OutDir string
	// Registry and Version make each reference <Registry>/<name>:<Version>.
	Registry, Version string
	// Bins overrides where an image's binary comes from, by image name.
	Bins map[string]string
	// Require lists images that must be built: a missing binary fails the
	// run instead of skipping the image.
	Require []string
	// SourceURL and Revision become the OCI source and revision labels.
	SourceURL, Revision string
	// SourceDateEpoch is the time of every file and of image creation, in
	// Unix seconds.
	SourceDateEpoch int64
}

// Defaults returns the settings `make images` starts from; SOURCE_DATE_EPOCH
// from getenv sets the default file time.
func Defaults(getenv func(string) string) (Options, error) {
	o := Options{
		BinDir: "bin/static", OutDir: "bin/images",
		Registry: "sandgate.local", Version: "dev",
		Bins:      map[string]string{},
		SourceURL: "https://github.com/sandgate/sandgate",
	}
	for _, im := range catalog() {
		if !im.optional {
			o.Require = append(o.Require, im.name)
		}
	}
	if v := getenv("SOURCE_DATE_EPOCH"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return o, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", v)
		}
		o.SourceDateEpoch = n
	}
	return o, nil
}

// load parses args over Defaults. It returns flag.ErrHelp after printing
// the usage for --help.
func load(args []string, getenv func(string) string, usageOut io.Writer) (Options, error) {
	o, err := Defaults(getenv)
	if err != nil {
		return o, err
	}
	fs := flag.NewFlagSet("sandgate-images", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	fs.Usage = func() { usage(usageOut, fs) }
	fs.StringVar(&o.BinDir, "bin-dir", o.BinDir, "directory of static binaries named after their images")
	fs.StringVar(&o.OutDir, "out-dir", o.OutDir, "directory for the tarballs, one <name>.tar per image (created if missing)")
	fs.StringVar(&o.Registry, "registry", o.Registry, "registry part of every reference: <registry>/<name>:<version>")
	fs.StringVar(&o.Version, "version", o.Version, "tag of every image and its org.opencontainers.image.version label")
	fs.Var(binFlag(o.Bins), "bin", "take image `name=path`'s binary from path instead of --bin-dir (repeatable), e.g. coredns=$CACHE/bin/coredns")
	fs.Func("require", "comma-separated `images` whose missing binary is an error instead of a skip (default "+strings.Join(o.Require, ",")+")", func(s string) error {
		o.Require = settings.SplitList(s)
		return nil
	})
	fs.StringVar(&o.SourceURL, "source", o.SourceURL, "org.opencontainers.image.source label")
	fs.StringVar(&o.Revision, "revision", o.Revision, "org.opencontainers.image.revision label (a commit id); empty leaves it out")
	fs.Int64Var(&o.SourceDateEpoch, "source-date-epoch", o.SourceDateEpoch, "Unix time of every file and of image creation (default $SOURCE_DATE_EPOCH or 0)")
	return o, settings.Parse(fs, args)
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `Usage: sandgate-images [flags]

Builds sandgate's container images without Docker: one reproducible
linux/amd64 image per static binary (same binaries and flags, same digests),
each written as a docker-archive tarball that
  ctr -n k8s.io images import <out-dir>/<name>.tar
loads. Prints one line per image: name, reference, manifest digest, size,
image ID and tarball, or why the image was skipped. The image ID (config
digest) is what crictl and the kubelet show; containerd derives its own
manifest when it imports a docker archive, so 'ctr images ls' shows another
DIGEST than the one printed here.

Images: %s.
busybox comes from Debian's busybox-static package (/bin/busybox);
kube-router carries Debian's iptables and ipset with their libraries.
coredns, kube-network-policies and kube-router are skipped when their
binary is missing unless --require names them.

Flags:
`, strings.Join(names(), ", "))
	fs.PrintDefaults()
}

// names lists the catalog's image names.
func names() []string {
	var out []string
	for _, im := range catalog() {
		out = append(out, im.name)
	}
	return out
}

// epoch is SourceDateEpoch as a time.
func (o Options) epoch() time.Time { return time.Unix(o.SourceDateEpoch, 0) }

// reference is the tag of image n.
func (o Options) reference(n string) string { return o.Registry + "/" + n + ":" + o.Version }

// Validate reports every problem at once and changes nothing.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.BinDir == "" || o.OutDir == "" {
		bad("--bin-dir and --out-dir must not be empty")
	}
	known := names()
	for _, n := range slices.Sorted(maps.Keys(o.Bins)) {
		if !slices.Contains(known, n) {
			bad("--bin %s: no such image (images: %s)", n, strings.Join(known, ", "))
		}
	}
	for _, n := range o.Require {
		if !slices.Contains(known, n) {
			bad("--require %s: no such image (images: %s)", n, strings.Join(known, ", "))
		}
	}
	for _, n := range known {
		if _, err := name.NewTag(o.reference(n), name.StrictValidation); err != nil {
			bad("reference %q (--registry, --version): %v", o.reference(n), err)
			break
		}
	}
	if o.SourceDateEpoch < 0 {
		bad("--source-date-epoch %d is negative", o.SourceDateEpoch)
	}
	return errors.Join(errs...)
}

// binFlag collects --bin name=path pairs.
type binFlag map[string]string

func (b binFlag) String() string {
	var pairs []string
	for _, n := range slices.Sorted(maps.Keys(b)) {
		pairs = append(pairs, n+"="+b[n])
	}
	return strings.Join(pairs, ",")
}

func (b binFlag) Set(s string) error {
	n, path, ok := strings.Cut(s, "=")
	if !ok || n == "" || path == "" {
		return errors.New("want name=path")
	}
	b[n] = path
	return nil
}
