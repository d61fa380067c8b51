package ssopreflight

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// The checks, by name.
const (
	CheckNetworkPolicy = "networkpolicy"
	CheckExposure      = "exposure"
	CheckHeader        = "header"
)

// Options say where the SSO variant lives. Zero values take the shipped
// manifests' names (see Defaults).
type Options struct {
	Kube kubernetes.Interface
	// NodeNamespace holds the node proxies; ProxyNamespace oauth2-proxy;
	// AuthNamespace the auth API.
	NodeNamespace, ProxyNamespace, AuthNamespace string
	// NodeProxyLabels, OAuth2ProxyLabels and AuthAPILabels select each
	// part's pods (and its workloads' pod templates).
	NodeProxyLabels, OAuth2ProxyLabels, AuthAPILabels map[string]string
	// ProxyPort is the node proxies' port that oauth2-proxy forwards to.
	ProxyPort int32
	// AllowedCIDRs may reach ProxyPort by ipBlock (the node CIDR, when the
	// CNI masquerades hops between nodes).
	AllowedCIDRs []netip.Prefix
	// ProbeURL, when set, is a node proxy address reachable from here: a
	// login asserted in the identity header is sent to it and must fail.
	ProbeURL string
	// HTTPClient sends the probe.
	HTTPClient *http.Client
}

// Defaults returns the shipped SSO variant's names.
func Defaults() Options {
	return Options{
		NodeNamespace: "sandgate-node", ProxyNamespace: "sandgate", AuthNamespace: "sandgate",
		NodeProxyLabels:   map[string]string{"app.kubernetes.io/name": "sandgate-nodeproxy"},
		OAuth2ProxyLabels: map[string]string{"app.kubernetes.io/name": "oauth2-proxy"},
		AuthAPILabels:     map[string]string{"app.kubernetes.io/name": "sandgate-authapi"},
		ProxyPort:         8080,
	}
}

// Result is the outcome of one check; a check fails with one Result per
// reason.
type Result struct {
	Check  string
	OK     bool
	Reason string
}

// Failed reports whether any result is a failure.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if !r.OK {
			return true
		}
	}
	return false
}

// state is what the checks read from the cluster, once.
type state struct {
	o          Options
	namespaces []corev1.Namespace
	// node proxies, oauth2-proxy and auth API: their workloads' pod
	// templates and their live pods.
	nodeProxies, oauth2Proxies, authAPIs []podShape
	pods                                 []corev1.Pod // every pod in the node and proxy namespaces
}

// podShape is a pod or a workload's pod template.
type podShape struct {
	what      string // "DaemonSet sandgate-node/nodeproxy", "pod ..."
	namespace string
	labels    labels.Set
	spec      corev1.PodSpec
	ip        string
}

// Run reads the cluster and runs every check. Its error means the cluster
// could not be read; failed conditions are Results.
func Run(ctx context.Context, o Options) ([]Result, error) {
	s, err := read(ctx, o)
	if err != nil {
		return nil, err
	}
	var rs []Result
	rs = append(rs, outcome(CheckNetworkPolicy, s.networkPolicy(ctx))...)
	rs = append(rs, outcome(CheckExposure, s.exposure(ctx))...)
	header, err := s.header(ctx)
	if err != nil {
		return nil, err
	}
	rs = append(rs, outcome(CheckHeader, header)...)
	return rs, nil
}

// outcome turns a check's reasons into Results: one pass when there are
// none.
func outcome(check string, reasons []string) []Result {
	if len(reasons) == 0 {
		return []Result{{Check: check, OK: true}}
	}
	rs := make([]Result, 0, len(reasons))
	for _, r := range reasons {
		rs = append(rs, Result{Check: check, Reason: r})
	}
	return rs
}

func read(ctx context.Context, o Options) (*state, error) {
	s := &state{o: o}
	nss, err := o.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	s.namespaces = nss.Items
	for _, ns := range uniq(o.NodeNamespace, o.ProxyNamespace) {
		pods, err := o.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list pods in %s: %w", ns, err)
		}
		s.pods = append(s.pods, pods.Items...)
	}
	if s.nodeProxies, err = s.shapes(ctx, o.NodeNamespace, o.NodeProxyLabels); err != nil {
		return nil, err
	}
	if s.oauth2Proxies, err = s.shapes(ctx, o.ProxyNamespace, o.OAuth2ProxyLabels); err != nil {
		return nil, err
	}
	if s.authAPIs, err = s.shapes(ctx, o.AuthNamespace, o.AuthAPILabels); err != nil {
		return nil, err
	}
	return s, nil
}

// shapes returns the DaemonSets' and Deployments' pod templates and the
// live pods in ns whose labels include want.
func (s *state) shapes(ctx context.Context, ns string, want map[string]string) ([]podShape, error) {
	dss, err := s.o.Kube.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list DaemonSets in %s: %w", ns, err)
	}
	deps, err := s.o.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Deployments in %s: %w", ns, err)
	}
	var all []podShape
	for _, ds := range dss.Items {
		all = append(all, templateShape("DaemonSet", &ds.ObjectMeta, ds.Spec.Template))
	}
	for _, d := range deps.Items {
		all = append(all, templateShape("Deployment", &d.ObjectMeta, d.Spec.Template))
	}
	for _, p := range s.pods {
		if p.Namespace == ns {
			all = append(all, podShape{what: "pod " + ns + "/" + p.Name, namespace: ns, labels: p.Labels, spec: p.Spec, ip: p.Status.PodIP})
		}
	}
	sel := labels.SelectorFromSet(want)
	return slices.DeleteFunc(all, func(sh podShape) bool { return !sel.Matches(sh.labels) }), nil
}

func templateShape(kind string, meta *metav1.ObjectMeta, t corev1.PodTemplateSpec) podShape {
	return podShape{what: kind + " " + meta.Namespace + "/" + meta.Name, namespace: meta.Namespace, labels: t.Labels, spec: t.Spec}
}

func uniq(xs ...string) []string {
	var out []string
	for _, x := range xs {
		found := false
		for _, y := range out {
			found = found || x == y
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}
