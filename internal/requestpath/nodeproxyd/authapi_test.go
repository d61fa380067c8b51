package nodeproxyd

import "testing"

// TestAuthAPISettings: /internal/ calls go to AUTHAPI_INTERNAL_URL (the
// auth API's INTERNAL_ADDR listener), or to AUTHAPI_URL when it is unset,
// and AUTH_PROXY_HEADER reaches the proxy.
func TestAuthAPISettings(t *testing.T) {
	base := map[string]string{"NODE_NAME": "n1", "AUTHAPI_URL": "http://authapi:8080/"}
	for _, tc := range []struct {
		name         string
		env          map[string]string
		wantInternal string
		wantErr      string
	}{
		{"internal defaults to the public URL", nil, "http://authapi:8080", ""},
		{"internal listener", map[string]string{"AUTHAPI_INTERNAL_URL": "http://authapi:8081/"}, "http://authapi:8081", ""},
		{"internal URL not http", map[string]string{"AUTHAPI_INTERNAL_URL": "ftp://authapi:8081"}, "", "AUTHAPI_INTERNAL_URL"},
		{"auth proxy header", map[string]string{"AUTH_PROXY_HEADER": "Remote-User"}, "http://authapi:8080", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := validOrRefused(t, base, tc.env, tc.wantErr)
			if !ok {
				return
			}
			o := c.proxyOptions()
			if o.AuthAPIInternal != tc.wantInternal || o.AuthAPI != "http://authapi:8080/" || o.AuthProxyHeader != tc.env["AUTH_PROXY_HEADER"] {
				t.Errorf("options: auth API %q, internal %q, proxy header %q", o.AuthAPI, o.AuthAPIInternal, o.AuthProxyHeader)
			}
		})
	}
}
