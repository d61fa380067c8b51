package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/defaults"
	"github.com/sandgate/sandgate/internal/sandboxapi"
)

// Delays stand in for the time real sandboxes take, so tests and the demo
// can exercise slow wake paths. Zero means no delay.
type Delays struct {
	// WarmAdoption is how long a claim waits before it adopts a Ready spare
	// (upstream: about 2s from claim to Ready on a warm pool).
	WarmAdoption time.Duration
	// ColdStart is how long a new Sandbox (a cold claim or a pool spare)
	// waits for its first pod.
	ColdStart time.Duration
	// Resume is how long a Sandbox switched back to Running waits for its
	// new pod.
	Resume time.Duration
}

// DefaultClusterDomain is the DNS domain of status.serviceFQDN.
const DefaultClusterDomain = "cluster.local"

// Release names the agent-sandbox release whose visible behaviour the
// stand-in follows (see the package doc for what differs).
type Release string

// The releases the stand-in models.
const (
	// ReleaseV1 is the newest release, v1.0.13: the default.
	ReleaseV1 Release = "v1.0.13"
	// ReleaseV05 is v0.5.6, the oldest release the platform supports.
	ReleaseV05 Release = "v0.5.6"
)

// Releases are the releases the stand-in models, newest first.
func Releases() []Release { return []Release{ReleaseV1, ReleaseV05} }

// Check reports whether r is a release the stand-in models; empty means
// ReleaseV1. It is the one rule every setting of a release goes through.
func (r Release) Check() error {
	switch r {
	case "", ReleaseV1, ReleaseV05:
		return nil
	}
	return fmt.Errorf("agent-sandbox release %q is not one the stand-in models (%s or %s)", string(r), ReleaseV1, ReleaseV05)
}

// Options configures a Controller.
type Options struct {
	// Client reaches the core API (pods, volume claims, services, nodes).
	// Required.
	Client kubernetes.Interface
	// Sandboxes reaches the agent-sandbox API. Required.
	Sandboxes *sandboxapi.Client
	// Namespaces are watched; empty watches all namespaces.
	Namespaces []string
	// NodeSelector picks the Nodes that pods are scheduled to, e.g. the
	// labels the simulated kubelet puts on its nodes. Empty means all.
	NodeSelector map[string]string
	// LeaveScheduling leaves pod placement to a real cluster's
	// kube-scheduler, as the agent-sandbox controller does: pods are created
	// without spec.nodeName and Nodes are not watched. False places every
	// pod on a Ready Node, for the simulated cluster that has no scheduler.
	LeaveScheduling bool
	// Delays slow down adoption, cold start and resume.
	Delays Delays
	// Workers is the number of reconcile workers; zero means 2.
	Workers int
	// ClusterDomain ends status.serviceFQDN; empty means cluster.local.
	ClusterDomain string
	// Release is the agent-sandbox release to behave as; empty means
	// ReleaseV1.
	Release Release
	// Logger receives the controller's logs; nil discards them.
	Logger *slog.Logger
}

// Validate reports every problem in o at once. It changes nothing.
func (o Options) Validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if o.Sandboxes == nil {
		errs = append(errs, errors.New("sandboxes client is required"))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers %d is negative", o.Workers))
	}
	if o.Delays.WarmAdoption < 0 || o.Delays.ColdStart < 0 || o.Delays.Resume < 0 {
		errs = append(errs, errors.New("delays must not be negative"))
	}
	if o.LeaveScheduling && len(o.NodeSelector) > 0 {
		errs = append(errs, errors.New("a node selector needs the controller to schedule pods"))
	}
	for _, ns := range o.Namespaces {
		if ns == "" {
			errs = append(errs, errors.New("an empty namespace in a namespace list"))
		}
	}
	if err := o.Release.Check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	defaults.Set(&o.Workers, 2)
	defaults.Set(&o.ClusterDomain, DefaultClusterDomain)
	defaults.Set(&o.Release, ReleaseV1)
	defaults.Set(&o.Logger, slog.New(slog.DiscardHandler))
	return o
}
