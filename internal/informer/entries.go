package informer

import (
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// The informers store these compact entries instead of API objects: a few
// strings and flags each, which keeps 100k users in little memory. The
// transforms below build them; they must be idempotent, because the
// informer may pass an entry through its transform again.

// objMeta is what the informer's store needs of an entry: the
// namespace/name key and the resourceVersion it compares on updates.
type objMeta struct {
	namespace, name, rv string
}

// GetObjectMeta lets meta.Accessor, and so the informer's key function,
// read an entry. The ObjectMeta is built per call; the store calls it only
// on changes.
func (m *objMeta) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: m.namespace, Name: m.name, ResourceVersion: m.rv}
}

// claimEntry is a managed SandboxClaim: whose account it is and which
// Sandbox it adopted.
type claimEntry struct {
	objMeta
	user    string
	sandbox string // status.sandbox.name, else the adoption annotation
	account account.Account
	invalid bool // the account annotations did not parse
}

// sandboxEntry is a Sandbox's routing state.
type sandboxEntry struct {
	objMeta
	uid string
	// podHint names the pod to prefer among several it owns: the legacy
	// pod-name annotation of v0.5.x, else the Sandbox's own name (v1.0).
	podHint   string
	node      string // status.nodeName
	suspended bool   // spec.operatingMode is Suspended
	stopped   bool   // its pod terminated (agents.Terminated)
	invalid   bool   // the controller gave up (agents.InvalidConfiguration)
	ready     bool   // condition Ready is True
}

// podEntry is one pod on this node.
type podEntry struct {
	objMeta
	uid         string
	sandboxUID  string // the Sandbox its controller ownerReference names
	ip          string
	node        string
	container   string
	port        int32
	addr        string // ip:port, built once
	ready       bool   // condition Ready is True
	terminating bool   // deletionTimestamp set
}

// nodeEntry is a Node's InternalIP.
type nodeEntry struct {
	objMeta
	ip string
}

// meta copies the identity of an object, sharing the index's namespace
// string instead of keeping one copy per object.
func (x *Index) meta(m *metav1.ObjectMeta) objMeta {
	ns := m.Namespace
	if ns == x.opts.Namespace {
		ns = x.opts.Namespace
	}
	return objMeta{namespace: ns, name: m.Name, rv: m.ResourceVersion}
}

func (x *Index) transformClaim(c *extensions.SandboxClaim) any {
	e := &claimEntry{
		objMeta: x.meta(&c.ObjectMeta),
		user:    c.Labels[account.LabelUser],
		sandbox: c.Status.Sandbox.Name,
	}
	if e.sandbox == "" {
		e.sandbox = c.Annotations[extensions.AnnotationSandboxName]
	}
	if a, err := account.FromClaim(c); err == nil {
		e.account = a
		e.user = a.User
	} else {
		e.invalid = true
	}
	return e
}

func (x *Index) transformSandbox(s *agents.Sandbox) any {
	e := &sandboxEntry{
		objMeta:   x.meta(&s.ObjectMeta),
		uid:       string(s.UID),
		podHint:   s.Annotations[agents.AnnotationPodName],
		node:      s.Status.NodeName,
		suspended: s.Spec.OperatingMode == agents.OperatingModeSuspended,
		stopped:   agents.Terminated(s),
		ready:     conditionTrue(s.Status.Conditions, agents.ConditionReady),
	}
	if e.podHint == "" {
		e.podHint = s.Name
	}
	_, e.invalid = agents.InvalidConfiguration(s)
	return e
}

func (x *Index) transformPod(p *corev1.Pod) any {
	e := &podEntry{
		objMeta:     x.meta(&p.ObjectMeta),
		uid:         string(p.UID),
		ip:          p.Status.PodIP,
		node:        p.Spec.NodeName,
		sandboxUID:  sandboxOwner(p),
		terminating: p.DeletionTimestamp != nil,
		port:        int32(x.opts.Port),
	}
	if c := x.appContainer(p); c != nil {
		e.container = c.Name
		for _, cp := range c.Ports {
			if cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP {
				e.port = cp.ContainerPort
				break
			}
		}
	}
	if e.ip != "" {
		e.addr = net.JoinHostPort(e.ip, strconv.Itoa(int(e.port)))
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			e.ready = c.Status == corev1.ConditionTrue
		}
	}
	return e
}

// sandboxOwner is the UID of the Sandbox that controls p, the link from a
// pod to its Sandbox on every agent-sandbox release, or "".
func sandboxOwner(p *corev1.Pod) string {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.Kind != sandboxKind || !strings.HasPrefix(ref.APIVersion, agents.GroupVersion.Group+"/") {
		return ""
	}
	return string(ref.UID)
}

// sandboxKind is the Kind of a Sandbox in an ownerReference.
const sandboxKind = "Sandbox"

// appContainer is the configured container, or the pod's first.
func (x *Index) appContainer(p *corev1.Pod) *corev1.Container {
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if x.opts.Container == "" || c.Name == x.opts.Container {
			return c
		}
	}
	return nil
}

func (x *Index) transformNode(n *corev1.Node) any {
	e := &nodeEntry{objMeta: x.meta(&n.ObjectMeta)}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			e.ip = a.Address
			break
		}
	}
	return e
}

func conditionTrue(conds []metav1.Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
