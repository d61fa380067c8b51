package nodeproxy

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/metricset"
)

// authEnded is the auth result of an open WebSocket or stream whose
// session ended.
const authEnded = "ended"

// stage is a request stage timed by the stage histogram.
type stage int

const (
	stageAuth stage = iota
	stageResolve
	stageHandshake
	stageUpstream // until the upstream's response headers
	stageCount
)

// stageNames are the stages' label values.
var stageNames = [stageCount]string{"auth", "resolve", "handshake", "upstream"}

// metrics holds the proxy's collectors. Label values come from small fixed
// sets: route kinds, status classes, stages, results; never a user or path.
type metrics struct {
	requests    *prometheus.CounterVec   // route, code
	stages      *prometheus.HistogramVec // stage
	inFlight    prometheus.Gauge
	websockets  prometheus.Gauge
	hops        *prometheus.CounterVec // direction, result
	auth        *prometheus.CounterVec // method, result
	renewals    *prometheus.CounterVec // result
	retries     prometheus.Counter
	wakes       *prometheus.CounterVec // result: ready, timeout, page, error
	wakeLatency prometheus.Histogram
	durations   *prometheus.HistogramVec // route
	// durationOf and durationHopIn are durations' observers, resolved
	// once so a request observes without a label lookup.
	durationOf    [routeKinds]prometheus.Observer
	durationHopIn prometheus.Observer
	// stageOf is stages' observers, resolved once.
	stageOf [stageCount]prometheus.Observer
	// requestOf is requests' counters by route slot and status class,
	// and authOf auth's by method and result, each resolved on its first
	// use.
	requestOf     [routeSlots][len(statusClasses)]counterOnce
	authOf        [len(authMethods)][len(authResults)]counterOnce
	openStreams   prometheus.GaugeFunc
	jwksRefreshed prometheus.GaugeFunc

	// authAPIUnreachable counts auth API calls no replica answered.
	authAPIUnreachable *prometheus.CounterVec // call
}

// gauges are the state the proxy's gauge functions read at each scrape.
type gauges struct {
	openStreams func() int
	// jwksRefreshed is Options.JWKSRefreshed; nil reads as 0.
	jwksRefreshed func() time.Time
}

func newMetrics(reg prometheus.Registerer, g gauges) (*metrics, error) {
	s := metricset.New("nodeproxy")
	m := &metrics{
		requests: s.CounterVec(prometheus.CounterOpts{
			Name: "requests_total", Help: "Requests by route kind and status class (WebSockets count once, as 101).",
		}, []string{"route", "code"}),
		stages: s.HistogramVec(prometheus.HistogramOpts{
			Name: "stage_duration_seconds", Help: "Time spent per request stage: auth, resolve, handshake, upstream (to response headers).",
			Buckets: []float64{.00001, .00005, .0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5},
		}, "stage"),
		inFlight: s.Gauge(prometheus.GaugeOpts{
			Name: "in_flight_requests", Help: "Proxied HTTP requests in flight, including streaming responses.",
		}),
		websockets: s.Gauge(prometheus.GaugeOpts{
			Name: "open_websockets", Help: "Bridged WebSockets open now.",
		}),
		hops: s.CounterVec(prometheus.CounterOpts{
			Name: "hops_total", Help: "Requests forwarded to (out: sent) or received from (in) another node's proxy; in by result: authenticated " +
				"(its proof verified with the hop key), refused (a hop key is set and the proof did not verify: handled as a client's request), " +
				"unverified (no hop key: trusted by source address).",
		}, []string{"direction", "result"}),
		auth: s.CounterVec(prometheus.CounterOpts{
			Name: "auth_total", Help: "Authentication decisions by method (cookie, bearer, none) and result: ok, rejected, or ended " +
				"(an open WebSocket or stream closed because its session ended: revoked, epoch raised, account deleted or recreated, " +
				"bearer token rotated, or COOKIE_MAX_AGE reached).",
		}, []string{"method", "result"}),
		renewals: s.CounterVec(prometheus.CounterOpts{
			Name: "renewals_total", Help: "Session renewals asked of the auth API, by result.",
		}, []string{"result"}),
		authAPIUnreachable: s.CounterVec(prometheus.CounterOpts{
			Name: "authapi_unreachable_total", Help: "Auth API calls no replica answered (each answered 503 unless the session was still valid), by call: renew, redeem, forward.",
		}, []string{"call"}),
		retries: s.Counter(prometheus.CounterOpts{
			Name: "upstream_401_retries_total", Help: "Requests retried once after the app answered 401 and the handshake was refreshed.",
		}),
		wakes: s.CounterVec(prometheus.CounterOpts{
			Name: "wakes_total", Help: "Requests held for a suspended or not-Ready sandbox, by result: ready, timeout (WAKE_TIMEOUT passed), " +
				"page (a browser navigation held for at most a second, then given the waking page, which reloads itself: each reload counts once), error.",
		}, []string{"result"}, metricset.Each(wakeReady, wakeTimeout, wakePage, wakeFailed)...),
		wakeLatency: s.Histogram(prometheus.HistogramOpts{
			Name: "wake_duration_seconds", Help: "How long a request was held while its sandbox woke.",
			Buckets: []float64{.1, .25, .5, 1, 2, 3, 5, 10, 20, 30, 60, 120},
		}),
		durations: s.HistogramVec(prometheus.HistogramOpts{
			Name: "request_duration_seconds", Help: "Whole-request latency by route kind, from the request read to the response's last byte (WebSockets not observed).",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, "route"),
		openStreams: s.GaugeFunc(prometheus.GaugeOpts{
			Name: "open_streams", Help: "Streamed responses (SSE) being bridged now.",
		}, func() float64 { return float64(g.openStreams()) }),
		jwksRefreshed: s.GaugeFunc(prometheus.GaugeOpts{
			Name: "jwks_last_refresh_timestamp_seconds", Help: "Unix time of the last successful JWKS fetch; 0 before the first.",
		}, func() float64 { return unixSeconds(g.jwksRefreshed) }),
	}
	for k := range routeKinds {
		m.durationOf[k] = m.durations.WithLabelValues(k.String())
	}
	m.durationHopIn = m.durations.WithLabelValues(routeHopIn)
	for st := range stageCount {
		m.stageOf[st] = m.stages.WithLabelValues(stageNames[st])
	}
	if err := s.Register(reg); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) observe(s stage, since time.Time) {
	m.stageOf[s].Observe(time.Since(since).Seconds())
}

// observeRequest records a finished request's whole duration. WebSockets
// are not observed: their duration is the session's, not a latency.
func (m *metrics) observeRequest(x *exchange, d time.Duration) {
	switch {
	case x.ws:
		return
	case x.hopIn:
		m.durationHopIn.Observe(d.Seconds())
	default:
		m.durationOf[x.route.kind].Observe(d.Seconds())
	}
}

// unixSeconds reads a timestamp for a gauge: 0 when there is none yet.
func unixSeconds(f func() time.Time) float64 {
	if f == nil {
		return 0
	}
	t := f()
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// statusClasses are the status labels, by classOf.
var statusClasses = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// classOf is a status's index in statusClasses: below 200 counts as
// 1xx, 500 and above as 5xx.
func classOf(status int) int { return min(max(status/100, 1), 5) - 1 }

// codeClass is the status label: "2xx", "4xx", ...
func codeClass(status int) string { return statusClasses[classOf(status)] }

// countRequest counts a finished request by its route and status class.
func (m *metrics) countRequest(x *exchange) {
	slot, class := x.routeSlot(), classOf(x.status)
	m.requestOf[slot][class].get(m.requests, slotLabel(slot), statusClasses[class]).Inc()
}

// authMethods are the authentication methods, and authResults the
// results counted when a request is authenticated, for authOf.
var (
	authMethods = [...]string{methodCookie, methodBearer, methodNone}
	authResults = [...]string{"rejected", "ok"}
)

// countAuth counts one authentication by method, one of authMethods
// (authenticate names one on every path), and result.
func (m *metrics) countAuth(method string, ok bool) {
	result := 0
	if ok {
		result = 1
	}
	m.authOf[slices.Index(authMethods[:], method)][result].get(m.auth, method, authResults[result]).Inc()
}

// counterOnce is one series of a two-label counter, looked up on its
// first use (when WithLabelValues makes it, as it would each time) and
// kept, so later uses skip the label hashing and the vector's lock.
type counterOnce struct {
	c atomic.Pointer[prometheus.Counter]
}

// get returns the series of vec for labels a and b.
func (o *counterOnce) get(vec *prometheus.CounterVec, a, b string) prometheus.Counter {
	if c := o.c.Load(); c != nil {
		return *c
	}
	c := vec.WithLabelValues(a, b)
	o.c.Store(&c)
	return c
}
