package server

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/tracing"
)

// metrics is the router's own Prometheus registry (never the global one) and the instruments the
// server records events into. State (admission, telemetry, readiness, the decision log's counters)
// is not recorded here: router/capacity's collector reads it at scrape time.
//
// Every label value is a configured ID, an enum name or a status class, so the label sets are
// bounded by the configuration: no path, request ID, address or caller string becomes a label.
type metrics struct {
	registry      *prometheus.Registry
	requests      *prometheus.CounterVec   // alias, tier, member, outcome, status_class
	duration      *prometheus.HistogramVec // tier, member
	firstByte     *prometheus.HistogramVec // tier, member
	attempts      *prometheus.CounterVec   // tier, member
	refusals      *prometheus.CounterVec   // tier, reason
	queueWait     *prometheus.HistogramVec // tier
	scrapes       *prometheus.CounterVec   // tier, member, result
	scrapeSeconds *prometheus.HistogramVec // tier
	reloads       *prometheus.CounterVec   // result: applied, unchanged, refused
	reloadOK      prometheus.Gauge
	reloadOKAt    prometheus.Gauge
	callerIDs     *prometheus.CounterVec // result: kept, malformed, secret
	bodyRefusals  *prometheus.CounterVec // caller, reason (bodymetrics.go)
	usage         usageMetrics           // usagemetrics.go
	pendingOnce   sync.Once
	seeded        seeder // the label sets seeded from the configuration in force (metricseed.go)
}

// requestBuckets are the request histograms' bounds in seconds: LLM requests run from milliseconds
// (a refusal upstream) to minutes (a long generation).
func requestBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
}

// scrapeBuckets are the scrape histogram's bounds: a scrape is bounded by its 1 s timeout.
func scrapeBuckets() []float64 {
	return []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anvil_router_requests_total",
			Help: "Finished front-door requests, by the decision record's alias, tier, member, outcome and status class."},
			[]string{"alias", "tier", "member", "outcome", "status_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "anvil_router_request_duration_seconds",
			Help: "Duration of requests that made their upstream attempt, from arrival to the end of the response.", Buckets: requestBuckets()},
			[]string{"tier", "member"}),
		firstByte: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "anvil_router_request_first_byte_seconds",
			Help: "Time from the start of the upstream attempt to its first response byte.", Buckets: requestBuckets()},
			[]string{"tier", "member"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anvil_router_upstream_attempts_total",
			Help: "Upstream attempts (at most one per request; never a retry)."}, []string{"tier", "member"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anvil_router_admission_refusals_total",
			Help: "Requests admission refused without reserving anything, by reason."}, []string{"tier", "reason"}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "anvil_router_admission_queue_wait_seconds",
			Help: "Time requests spent in a tier's admission queue, whether they were then admitted, refused at the timeout or left.", Buckets: requestBuckets()},
			[]string{"tier"}),
		scrapes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anvil_router_pressure_scrapes_total",
			Help: "Completed pressure scrapes of capacity-tier members, by result (ok, failed, unknown)."},
			[]string{"tier", "member", "result"}),
		scrapeSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "anvil_router_pressure_scrape_duration_seconds",
			Help: "Duration of completed pressure scrapes.", Buckets: scrapeBuckets()}, []string{"tier"}),
	}
	// The reload family follows Prometheus's own prometheus_config_last_reload_* series: startup is
	// the first successful load.
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anvil_router_config_reloads_total",
		Help: "Configuration reload attempts, by result (applied, unchanged, refused)."}, []string{"result"})
	m.reloadOK = prometheus.NewGauge(prometheus.GaugeOpts{Name: "anvil_router_config_last_reload_successful",
		Help: "Whether the last configuration reload attempt succeeded (1) or was refused (0)."})
	m.reloadOKAt = prometheus.NewGauge(prometheus.GaugeOpts{Name: "anvil_router_config_last_reload_success_timestamp_seconds",
		Help: "When the configuration in force was last loaded or reloaded successfully, in seconds since the epoch."})
	for _, r := range []string{"applied", "unchanged", "refused"} {
		m.reloads.WithLabelValues(r)
	}
	m.callerIDs = newCallerIDCounter()
	m.bodyRefusals = newBodyRefusals()
	m.usage = newUsageMetrics(m.registry)
	m.registry.MustRegister(m.requests, m.duration, m.firstByte, m.attempts, m.refusals, m.queueWait, m.scrapes, m.scrapeSeconds,
		m.reloads, m.reloadOK, m.reloadOKAt, m.callerIDs, m.bodyRefusals,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watch registers the scrape-time views: the capacity collector over the generation in force.
func (m *metrics) watch(view func() ([]capacity.TierSpec, capacity.Sources)) {
	m.registry.MustRegister(capacity.NewLiveCollector(view))
}

// watchPending registers the pressure cache's pending-refresh gauge, once: at startup when a tier
// uses the capacity strategy, else when a reload creates the cache.
func (m *metrics) watchPending(cache *scrape.Cache) {
	m.pendingOnce.Do(func() {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "anvil_router_pressure_refreshes_pending",
			Help: "Pressure refreshes queued or running (at most the capacity members)."},
			func() float64 { return float64(cache.Pending()) }))
	})
}

// reloaded records one reload attempt at now (result "" is the startup load: nothing counted).
func (m *metrics) reloaded(result string, now time.Time) {
	if result != "" {
		m.reloads.WithLabelValues(result).Inc()
	}
	if result == "refused" {
		m.reloadOK.Set(0)
		return
	}
	m.reloadOK.Set(1)
	m.reloadOKAt.Set(float64(now.UnixNano()) / 1e9)
}

// finished records one finished request from its decision record: the record is the one outcome
// classification, so the metrics and the decision log cannot disagree.
func (m *metrics) finished(r decisionlog.Record) {
	tier, member := idLabel(r.Tier), idLabel(r.Member)
	alias := r.Alias
	if alias != "" && !ident.ValidAlias(alias) {
		alias = decisionlog.InvalidMarker
	}
	outcome := string(r.Outcome)
	if !r.Outcome.Valid() {
		outcome = decisionlog.InvalidMarker
	}
	m.requests.WithLabelValues(alias, tier, member, outcome, statusClass(r.Status)).Inc()
	if r.Attempts == 1 {
		m.attempts.WithLabelValues(tier, member).Inc()
		m.duration.WithLabelValues(tier, member).Observe(r.Duration.Seconds())
	}
	if r.FirstByte > 0 {
		m.firstByte.WithLabelValues(tier, member).Observe(r.FirstByte.Seconds())
	}
	if r.Queued > 0 {
		m.queueWait.WithLabelValues(tier).Observe(r.Queued.Seconds())
	}
}

// refused counts an admission refusal of a configured tier.
func (m *metrics) refused(tier string, err error) {
	m.refusals.WithLabelValues(idLabel(tier), refusalLabel(err)).Inc()
}

// scraped is the pressure cache's observer.
func (m *metrics) scraped(s scrape.Scrape) {
	result := s.Class.String()
	if s.Class != pressure.ClassOK && s.Class != pressure.ClassFailed && s.Class != pressure.ClassUnknown {
		result = "unknown"
	}
	m.scrapes.WithLabelValues(idLabel(s.Tier), idLabel(s.Member), result).Inc()
	m.scrapeSeconds.WithLabelValues(idLabel(s.Tier)).Observe(s.Duration.Seconds())
}

// idLabel keeps a label value to a safe ID, "" (none) or the invalid marker.
func idLabel(id string) string {
	if id == "" || ident.ValidID(id) {
		return id
	}
	return decisionlog.InvalidMarker
}

// statusClass is "1xx".."5xx", or "none" when nothing was sent.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "none"
	}
	return [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}[status/100-1]
}

// handler serves the registry in the Prometheus text format. A collector error is logged with a fixed
// message (never its text) and the rest of the scrape is still served.
func (m *metrics) handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      gatherLog{log},
	})
}

// gatherLog adapts slog to promhttp's logger without passing on the error's text.
type gatherLog struct{ log *slog.Logger }

func (g gatherLog) Println(...any) { g.log.Warn("metrics gathering error") }

// watchTracer registers the dropped-span counter, read from the tracer at scrape time; 0 with
// tracing off, so the series is always there to alert on.
func (m *metrics) watchTracer(t *tracing.Provider) {
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "anvil_router_trace_spans_dropped_total",
		Help: "Sampled trace spans lost instead of exported: the export queue was full, the collector refused or could not be reached, or shutdown gave up."},
		func() float64 {
			if t == nil {
				return 0
			}
			return float64(t.Dropped())
		}))
}
