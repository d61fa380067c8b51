package main

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, testkit.Env(nil), &out, &errOut); code != 0 {
		t.Fatalf("--help exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Usage: sandbox-controller-standin", "STAND-IN for the agent-sandbox controller",
		"not available as a Go module", "kube-scheduler", "--kubeconfig [KUBECONFIG]", "--namespace [NAMESPACE]",
		"--cluster-domain [CLUSTER_DOMAIN]", "(default cluster.local)", "--log-level [LOG_LEVEL]",
		"--release [RELEASE]", "(default v1.0.13)", "v0.5.6"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestEnvThenFlags(t *testing.T) {
	o, err := load([]string{"--namespace", "sandgate, team-b", "--log-level=debug"}, testkit.Env(map[string]string{
		"KUBECONFIG": "/etc/kube/config", "NAMESPACE": "ignored", "CLUSTER_DOMAIN": "k8s.example", "WORKERS": "4",
		"RELEASE": "v0.5.6",
	}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	got := o.controllerOptions(nil, nil, slog.New(slog.DiscardHandler))
	if o.Kubeconfig != "/etc/kube/config" || !slices.Equal(got.Namespaces, []string{"sandgate", "team-b"}) ||
		got.ClusterDomain != "k8s.example" || got.Workers != 4 || !got.LeaveScheduling || o.LogLevel != "debug" ||
		got.Release != controller.ReleaseV05 {
		t.Errorf("options %+v, controller options %+v", o, got)
	}
}

func TestValidateReportsEverything(t *testing.T) {
	o, err := load([]string{"--namespace", "ok,Not_A_Namespace", "--cluster-domain", "bad domain"}, testkit.Env(map[string]string{
		"WORKERS": "many", "LOG_LEVEL": "loud", "RELEASE": "newest",
	}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	err = o.Validate()
	for _, want := range []string{`WORKERS="many"`, `NAMESPACE entry "Not_A_Namespace"`, `CLUSTER_DOMAIN "bad domain"`, "LOG_LEVEL", `RELEASE: agent-sandbox release "newest"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
	var errOut bytes.Buffer
	if code := run(context.Background(), []string{"--workers", "0"}, testkit.Env(nil), &bytes.Buffer{}, &errOut); code != 2 || !strings.Contains(errOut.String(), "WORKERS 0") {
		t.Errorf("run with --workers 0: exit %d, %q", code, errOut.String())
	}
}

func TestDefaultRelease(t *testing.T) {
	o, err := load(nil, testkit.Env(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := o.controllerOptions(nil, nil, slog.New(slog.DiscardHandler)).Release; got != controller.ReleaseV1 {
		t.Errorf("default release %q, want %q", got, controller.ReleaseV1)
	}
}
