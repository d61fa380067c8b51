package sweeper

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestIdentity(t *testing.T) {
	for _, tt := range []struct{ pod, addr string }{
		{"authapi-7d9f-x2k", "10.0.0.5:8081"},
		{"authapi-0", "[fd00::5]:8081"},
		{"a.b", "authapi-0.authapi.sandgate.svc:8081"},
	} {
		pod, addr, err := ParseIdentity(Identity(tt.pod, tt.addr))
		if err != nil || pod != tt.pod || addr != tt.addr {
			t.Errorf("round trip of %q, %q: %q, %q, %v", tt.pod, tt.addr, pod, addr, err)
		}
	}
	for _, id := range []string{"", "authapi-0", "authapi-0_", "_10.0.0.5:80", "Authapi_10.0.0.5:80", "authapi-0_10.0.0.5", "authapi-0_:80"} {
		if _, _, err := ParseIdentity(id); !errors.Is(err, ErrBadIdentity) {
			t.Errorf("ParseIdentity(%q) = %v, want ErrBadIdentity", id, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	good := testOptions()
	tests := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"defaults", func(*Options) {}, ""},
		{"short timings", func(o *Options) {
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 2*time.Second, time.Second, 200*time.Millisecond
		}, ""},
		{"bad namespace", func(o *Options) { o.Namespace = "Sandgate" }, "namespace"},
		{"bad identity", func(o *Options) { o.Identity = "authapi-0" }, "identity"},
		{"fractional lease", func(o *Options) { o.LeaseDuration = 1500 * time.Millisecond; o.RenewDeadline = time.Second }, "whole number"},
		{"renew not shorter", func(o *Options) { o.LeaseDuration = 5 * time.Second }, "renew deadline"},
		{"retry too long", func(o *Options) { o.RetryPeriod = 9 * time.Second }, "retry period"},
		{"negative idle", func(o *Options) { o.IdleTimeout = -time.Second }, "idle timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.edit(&o)
			err := o.Validate()
			// Clients are checked too; without them every case fails on them.
			if err == nil || !strings.Contains(err.Error(), "clients are required") {
				t.Fatalf("missing clients not reported: %v", err)
			}
			msgs := strings.Split(err.Error(), "\n")
			if tt.want == "" && len(msgs) != 1 {
				t.Errorf("unexpected problems: %v", err)
			}
			if tt.want != "" && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v does not mention %q", err, tt.want)
			}
		})
	}
}
