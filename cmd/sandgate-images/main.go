// Command sandgate-images builds sandgate's container images without
// Docker: for each static binary in a directory (make static's bin/static)
// it assembles a reproducible linux/amd64 image with internal/clustertools/ociimage and
// writes it as a tarball that `ctr -n k8s.io images import` loads, tagged
// sandgate.local/<name>:<version> for kustomize `images:` entries to point
// at. See `sandgate-images --help`.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/sandgate/sandgate/internal/settings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is main without the process: 0 when every required image was
// written, 1 on a failure, 2 on a usage error.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := load(args, getenv, stdout)
	if code, ok := settings.Loaded("sandgate-images", stderr, err, o.Validate); !ok {
		return code
	}
	if err := buildAll(o, stdout); err != nil {
		fmt.Fprintf(stderr, "sandgate-images: %v\n", err)
		return 1
	}
	return 0
}
