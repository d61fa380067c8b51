package testkit

import (
	"net/http"

	"k8s.io/client-go/rest"
)

// ObserveRequests has every client built from cfg show each request to see
// before sending it to the API server, to count or inspect what a
// component asks of it. see must leave the request as it found it.
func ObserveRequests(cfg *rest.Config, see func(*http.Request)) {
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return observer{rt, see} }
}

type observer struct {
	rt  http.RoundTripper
	see func(*http.Request)
}

func (o observer) RoundTrip(r *http.Request) (*http.Response, error) {
	o.see(r)
	return o.rt.RoundTrip(r)
}
