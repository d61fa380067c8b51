package sandboxapi

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// NewScheme returns a scheme with the built-in Kubernetes types and the
// agent-sandbox types.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, agents.AddToScheme, extensions.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return s, nil
}

// Client reaches the agent-sandbox resources of one API server.
type Client struct {
	agents     rest.Interface
	extensions rest.Interface
	params     runtime.ParameterCodec
}

// Typed clients for each kind.
type (
	SandboxClient         = gentype.ClientWithList[*agents.Sandbox, *agents.SandboxList]
	SandboxClaimClient    = gentype.ClientWithList[*extensions.SandboxClaim, *extensions.SandboxClaimList]
	SandboxWarmPoolClient = gentype.ClientWithList[*extensions.SandboxWarmPool, *extensions.SandboxWarmPoolList]
	SandboxTemplateClient = gentype.ClientWithList[*extensions.SandboxTemplate, *extensions.SandboxTemplateList]
)

// NewForConfig builds a Client from a REST config.
func NewForConfig(cfg *rest.Config) (*Client, error) {
	s, err := NewScheme()
	if err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(s)
	build := func(gv schema.GroupVersion) (rest.Interface, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion = &gv
		c.APIPath = "/apis"
		c.ContentType = runtime.ContentTypeJSON
		c.NegotiatedSerializer = codecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		rc, err := rest.RESTClientFor(c)
		if err != nil {
			return nil, fmt.Errorf("build REST client for %s: %w", gv, err)
		}
		return rc, nil
	}
	ac, err := build(agents.GroupVersion)
	if err != nil {
		return nil, err
	}
	ec, err := build(extensions.GroupVersion)
	if err != nil {
		return nil, err
	}
	return &Client{agents: ac, extensions: ec, params: runtime.NewParameterCodec(s)}, nil
}

// Sandboxes returns a client for Sandboxes in namespace.
func (c *Client) Sandboxes(namespace string) *SandboxClient {
	return typed[agents.Sandbox, agents.SandboxList]("sandboxes", c.agents, c.params, namespace)
}

// SandboxClaims returns a client for SandboxClaims in namespace.
func (c *Client) SandboxClaims(namespace string) *SandboxClaimClient {
	return typed[extensions.SandboxClaim, extensions.SandboxClaimList]("sandboxclaims", c.extensions, c.params, namespace)
}

// SandboxWarmPools returns a client for SandboxWarmPools in namespace.
func (c *Client) SandboxWarmPools(namespace string) *SandboxWarmPoolClient {
	return typed[extensions.SandboxWarmPool, extensions.SandboxWarmPoolList]("sandboxwarmpools", c.extensions, c.params, namespace)
}

// SandboxTemplates returns a client for SandboxTemplates in namespace.
func (c *Client) SandboxTemplates(namespace string) *SandboxTemplateClient {
	return typed[extensions.SandboxTemplate, extensions.SandboxTemplateList]("sandboxtemplates", c.extensions, c.params, namespace)
}

// object and list are the pointer types of an API object O and a list L.
type (
	object[O any] interface {
		*O
		runtime.Object
		metav1.Object
	}
	list[L any] interface {
		*L
		runtime.Object
	}
)

// typed builds the client of the kind whose objects are O and lists L,
// served as resource by rc.
func typed[O, L any, PO object[O], PL list[L]](resource string, rc rest.Interface, params runtime.ParameterCodec, namespace string) *gentype.ClientWithList[PO, PL] {
	return gentype.NewClientWithList(resource, rc, params, namespace,
		func() PO { return new(O) },
		func() PL { return new(L) })
}

// NewClients builds the Kubernetes and sandbox clients of a component from
// a kubeconfig file (empty: the in-cluster ServiceAccount), identified to
// the API server by userAgent.
func NewClients(kubeconfig, userAgent string) (kubernetes.Interface, *Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.UserAgent = userAgent
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("build kube client: %w", err)
	}
	sb, err := NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return kube, sb, nil
}
