package nodeproxy

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OpsHandler serves the operations port: /healthz (the process is up),
// /readyz (every ReadyCheck passes and no shutdown has begun) and
// /metrics (the Gatherer). Probes get their own listener so the access log
// never has to filter them out.
func (p *Proxy) OpsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if missing := p.notReady(); len(missing) > 0 {
			http.Error(w, "not ready: "+strings.Join(missing, ", "), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	if p.opts.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(p.opts.Gatherer, promhttp.HandlerOpts{}))
	}
	return mux
}

// notReady lists the failing readiness conditions.
func (p *Proxy) notReady() []string {
	var missing []string
	if p.draining.Load() {
		missing = append(missing, "shutting down")
	}
	for _, c := range p.opts.ReadyChecks {
		if !c.Ready() {
			missing = append(missing, c.Name)
		}
	}
	return missing
}
