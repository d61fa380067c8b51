package informer

import (
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/defaults"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// Defaults that New applies to zero Options fields.
const (
	// DefaultClaimPrefix starts every account claim's name.
	DefaultClaimPrefix = "dsh-"
	// DefaultPort is the agent app's port when its container declares none.
	DefaultPort = 3080
)

// Options configures an Index. The list-watchers are typed clients scoped to
// the sandbox namespace (Nodes: cluster scope); main builds them.
type Options struct {
	// Namespace holds the claims, Sandboxes and pods. Required.
	Namespace string
	// NodeName is this node; only its pods are watched. Required.
	NodeName string
	// ClaimPrefix starts claim names: user bob's claim is ClaimPrefix+"bob".
	ClaimPrefix string
	// Container names the agent app's container; empty means the pod's
	// first container.
	Container string
	// Port is the app's port when its container declares no TCP port.
	Port int

	Claims    sandboxapi.ListWatcher[*extensions.SandboxClaimList]
	Sandboxes sandboxapi.ListWatcher[*agents.SandboxList]
	Pods      sandboxapi.ListWatcher[*corev1.PodList]
	Nodes     sandboxapi.ListWatcher[*corev1.NodeList]

	// OnPodGone, when set, is called with a pod's UID once the pod is
	// deleted, replaced, terminating or its Sandbox suspended: cookies
	// cached for it are useless from then on.
	OnPodGone func(uid string)
	// OnUserGone, when set, is called with a user whose claim was deleted.
	OnUserGone func(user string)
	// Logger receives informer problems; nil discards them.
	Logger *slog.Logger
}

// Validate reports every problem with o at once and changes nothing.
func (o Options) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q is not a DNS label", o.Namespace))
	}
	if msgs := validation.IsDNS1123Subdomain(o.NodeName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("node name %q is not a DNS subdomain", o.NodeName))
	}
	if o.ClaimPrefix != "" {
		if err := account.CheckClaimPrefix(o.ClaimPrefix); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Container != "" {
		if msgs := validation.IsDNS1123Label(o.Container); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("container %q is not a DNS label", o.Container))
		}
	}
	if o.Port < 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d outside 1-65535", o.Port))
	}
	if o.Claims == nil || o.Sandboxes == nil || o.Pods == nil || o.Nodes == nil {
		errs = append(errs, errors.New("claims, sandboxes, pods and nodes list-watchers are required"))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	defaults.Set(&o.ClaimPrefix, DefaultClaimPrefix)
	defaults.Set(&o.Port, DefaultPort)
	defaults.Set(&o.Logger, slog.New(slog.DiscardHandler))
	if o.OnPodGone == nil {
		o.OnPodGone = func(string) {}
	}
	if o.OnUserGone == nil {
		o.OnUserGone = func(string) {}
	}
	return o
}
