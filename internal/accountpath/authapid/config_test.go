package authapid

import (
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestEnvironmentThenFlags(t *testing.T) {
	c := testkit.Loaded(t, Load, []string{"--namespace", "from-flag", "--wake-timeout=2m"}, map[string]string{
		"NAMESPACE": "from-env", "WAKE_TIMEOUT": "30", "COOKIE_MAX_AGE": "3600", "AUTH_RATE_WINDOW": "1.5",
		"COOKIE_SECURE": "false", "ALLOW_INSECURE_COOKIES": "1", "TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.1",
	})
	if c.Namespace != "from-flag" || c.WakeTimeout != 2*time.Minute || c.CookieMaxAge != time.Hour || c.RateWindow != 1500*time.Millisecond ||
		c.CookieSecure || !c.AllowInsecure {
		t.Errorf("config %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("valid config refused: %v", err)
	}
	p, _ := c.trustedProxies()
	if len(p) != 2 || p[1].String() != "192.0.2.1/32" {
		t.Errorf("trusted proxies %v", p)
	}
}

func TestInsecureCookiesNeedTheDemoSwitch(t *testing.T) {
	c := testkit.Loaded(t, Load, nil, map[string]string{"COOKIE_SECURE": "false"})
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "ALLOW_INSECURE_COOKIES") {
		t.Errorf("COOKIE_SECURE=false alone: %v", err)
	}
	c = testkit.Loaded(t, Load, []string{"--allow-insecure-cookies"}, map[string]string{"COOKIE_SECURE": "false"})
	if err := c.Validate(); err != nil {
		t.Errorf("with the switch: %v", err)
	}
}
