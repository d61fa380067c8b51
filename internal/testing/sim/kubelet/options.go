package kubelet

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/defaults"
	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
)

// Defaults that New applies to zero Options fields.
const (
	// DefaultPodPort is where every pod's agent app listens, like DSH Web.
	DefaultPodPort = 3080
	// DefaultLogMaxSize is the kubelet's containerLogMaxSize (10Mi).
	DefaultLogMaxSize = 10 << 20
	// DefaultLogMaxFiles is the kubelet's containerLogMaxFiles.
	DefaultLogMaxFiles = 5
	// DefaultLogMaxLine is containerd's max-container-log-line-size.
	DefaultLogMaxLine = 16 << 10
	// DefaultNodePrefix names nodes <prefix>-1, <prefix>-2, ...
	DefaultNodePrefix = "sim-node"

	defaultProbeInterval = 50 * time.Millisecond
	defaultStopTimeout   = 2 * time.Second
)

// Options configures a Kubelet.
type Options struct {
	// Client reaches the API server. Required.
	Client kubernetes.Interface
	// Nodes is how many simulated nodes to run; zero means 1.
	Nodes int
	// NodePrefix names the nodes <NodePrefix>-<i>, i from 1. Node objects
	// are cluster-scoped, so two simulated clusters sharing an API server
	// need different prefixes.
	NodePrefix string
	// NodeLabels are added to every Node object, e.g. for a scheduler's
	// node selector.
	NodeLabels map[string]string
	// Namespaces limit the PersistentVolumeClaims watched for volume
	// cleanup; empty watches all namespaces. Pods are watched by node name
	// in every namespace, as a kubelet does.
	Namespaces []string
	// LogDir holds one log root per node, <LogDir>/<node>, laid out like
	// /var/log/pods. Required, absolute.
	LogDir string
	// DataDir holds the directories standing in for volumes, and each
	// node's pod directory, <DataDir>/kubelet/<node>/pods. Required,
	// absolute.
	DataDir string
	// PodPort is the port every pod's app listens on; zero means 3080.
	PodPort int
	// LogMaxSize rotates a container log once it would grow past this many
	// bytes; zero means 10 MiB.
	LogMaxSize int64
	// LogMaxFiles bounds a container's log files, the current one
	// included; zero means 5.
	LogMaxFiles int
	// LogMaxLine bounds the text of one CRI record; longer lines are split
	// into P records. Zero means 16 KiB.
	LogMaxLine int
	// App is the template for every pod's agent app; Stdout, Stderr and
	// DataDir are set per container, TrustedHosts gets the container's
	// DSH_TRUSTED_HOSTS. Zero fields take agentapp's defaults.
	App agentapp.Options
	// ProbeInterval spaces readiness probes while an app starts; zero
	// means 50ms.
	ProbeInterval time.Duration
	// StopTimeout bounds an app's graceful shutdown when its pod is
	// deleted; zero means 2s.
	StopTimeout time.Duration
	// Now stamps log records; nil means time.Now.
	Now func() time.Time
	// Logger receives the kubelet's own logs; nil discards them.
	Logger *slog.Logger
}

// Validate reports every problem in o at once. It changes nothing.
func (o Options) Validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if o.Nodes < 0 || o.Nodes > 150 {
		errs = append(errs, fmt.Errorf("nodes %d is not in 0..150", o.Nodes))
	}
	for name, dir := range map[string]string{"log dir": o.LogDir, "data dir": o.DataDir} {
		if dir == "" || !filepath.IsAbs(dir) {
			errs = append(errs, fmt.Errorf("%s %q is not an absolute path", name, dir))
		}
	}
	if o.PodPort < 0 || o.PodPort > 65535 {
		errs = append(errs, fmt.Errorf("pod port %d is out of range", o.PodPort))
	}
	if o.LogMaxSize < 0 || o.LogMaxFiles < 0 || o.LogMaxLine < 0 {
		errs = append(errs, errors.New("log limits must not be negative"))
	}
	if o.LogMaxFiles == 1 {
		errs = append(errs, errors.New("log max files must be at least 2 to rotate"))
	}
	if o.ProbeInterval < 0 || o.StopTimeout < 0 {
		errs = append(errs, errors.New("intervals must not be negative"))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	defaults.Set(&o.Nodes, 1)
	defaults.Set(&o.NodePrefix, DefaultNodePrefix)
	defaults.Set(&o.PodPort, DefaultPodPort)
	defaults.Set(&o.LogMaxSize, DefaultLogMaxSize)
	defaults.Set(&o.LogMaxFiles, DefaultLogMaxFiles)
	defaults.Set(&o.LogMaxLine, DefaultLogMaxLine)
	defaults.Set(&o.ProbeInterval, defaultProbeInterval)
	defaults.Set(&o.StopTimeout, defaultStopTimeout)
	defaults.Clock(&o.Now)
	defaults.Set(&o.Logger, slog.New(slog.DiscardHandler))
	return o
}
