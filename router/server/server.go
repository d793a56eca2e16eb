// Package server is the router's composition root and HTTP surface: the OpenAI front door (chat
// completions, completions, Responses, embeddings, audio, models), health and readiness, and the authenticated
// admin API. New wires config, admission, readiness, routing, relay and the decision log; Serve runs the
// background workers and the listener and shuts all of it down gracefully.
package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/health"
	"github.com/anvil-llm/anvil/router/intent"
	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/readiness"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/router/scheduler"
	"github.com/anvil-llm/anvil/router/spool"
	"github.com/anvil-llm/anvil/router/statuspage"
	"github.com/anvil-llm/anvil/router/tracing"
)

// Server is one router instance. Create it with New, run it with Serve (or Start and Handler), stop
// it with Close. Its configuration is the generation in force (generation.go), replaced as a whole
// by Reload.
type Server struct {
	opts      Options
	log       *slog.Logger
	gen       atomic.Pointer[generation] // the configuration in force
	reloads   reloadState
	client    *http.Client // the startup transport: readiness probes and pressure scrapes
	prober    *readiness.Prober
	pressure  atomic.Pointer[scrape.Cache] // nil until a tier uses the capacity strategy: no telemetry goroutines at all
	cert      atomic.Pointer[tls.Certificate]
	decisions *decisionlog.Log
	sinkFile  *os.File // the decision log's JSONL file, owned here; nil when none
	metrics   *metrics
	tracer    *tracing.Provider                       // nil: tracing off (tracing.go)
	stopBy    atomic.Int64                            // unix ns the trace flush must end by; 0 before a shutdown (tracing.go)
	view      func(capacity.Sources) capacity.Sources // test seam over every generation's sources
	intent    *intent.Store                           // nil without intent_file: quiesce intent lives in memory only
	kept      *intent.Kept                            // intent of scopes not configured now (kept.go)
	engine    *gin.Engine
	page      *statuspage.Page // the operator status page's embedded files, served without a token
	bodies    *budget          // request-body bytes being read and parsed (limits.max_inflight_body_bytes)
	spills    *budget          // disk of held audio files (limits.max_spill_bytes, spill.go)
	spool     *spool.Dir       // where held audio files spill; nil when the directory is unusable
	// unknownCaller holds the bodies of a request whose caller authenticate did not record (none on
	// the /v1 routes, which all authenticate).
	unknownCaller *holder
	clock         func() time.Time
	started       time.Time
	probed        atomic.Bool    // the first readiness round has completed
	inflight      sync.WaitGroup // handlers still running
	ending        shutdownTally  // what a shutdown finished and cut (shutdownlog.go)

	workers    context.Context // background work (probes of added members) ends with it
	stopWork   context.CancelFunc
	background sync.WaitGroup
}

// Options are the non-config dependencies of a Server.
type Options struct {
	Logger *slog.Logger // nil = discard
	// Dial opens the connections to upstreams (the relay, readiness probes and pressure scrapes);
	// nil is a net.Dialer with the configured connect timeout. Tests pass an in-memory network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Now is the server's one clock: request timings, decision records (the relay's first-byte time
	// included), pressure samples and their ages, passive health and the decision sink's health; nil
	// = time.Now. I/O timers stay real (docs/ARCHITECTURE.md, "One clock"). Tests give a manual clock.
	Now func() time.Time
	// MetricsListener, when set, is where Serve serves /metrics alone, without a token, instead of
	// binding the config's metrics.listen; Serve closes it. For tests and embedders that bind their
	// own listeners.
	MetricsListener net.Listener
	// IntentFS is the file system of intent_file; nil is the operating system's. Tests inject
	// failures through it.
	IntentFS intent.FS
	// OpenDecisionFile opens decision_log.jsonl_path for appending; nil is the server's own open,
	// which refuses anything but a regular file (ErrNotRegular). Tests open a device through it
	// (/dev/full: a disk that is always full).
	OpenDecisionFile func(path string) (*os.File, error)
	// ConfigPath is the config file the server was started from ("" when none): GET
	// /admin/v1/config shows it.
	ConfigPath string
	// ConfigDigest is the sha256 hex of the file bytes the startup config was parsed from ("" when
	// none). A reload of a file with the same digest is "unchanged"; decision records carry its first
	// 16 hex digits.
	ConfigDigest string
	// Load rereads and validates the config file for ReloadFile (SIGHUP, POST
	// /admin/v1/config/reload). nil: those reloads are refused, there is no file to read.
	Load LoadFunc
	// SpoolDir is the directory of held audio files' spool files; "" is spool.DefaultPath()
	// (anvil-spool under os.TempDir, which follows $TMPDIR). Tests give their own.
	SpoolDir string
	// SpanExporter, when set, receives the spans instead of the OTLP exporter tracing's settings
	// describe (tracing must still be on): for tests and embedders.
	SpanExporter sdktrace.SpanExporter
	// TraceFlushCap bounds the trace flush at shutdown; 0 is DefaultTraceFlushCap. The flush runs
	// last, after the decision log is closed, and never past SIGTERM + shutdown_grace + this cap.
	TraceFlushCap time.Duration
	// Version and Revision label anvil_router_build_info (the linker's strings, as `anvil-router
	// version` prints them); "" reads what the Go toolchain stamped into the binary.
	Version, Revision string
}

// New wires a server from a validated config. It opens the decision log's file but starts nothing:
// Start (or Serve) starts the background work, Close stops it.
func New(cfg config.Config, opts Options) (*Server, error) {
	return newServer(cfg, opts, nil)
}

// newServer is New with a seam for tests (export_test.go): view wraps the sources the capacity
// views and the collector read, so a test can watch or fail every read.
func newServer(cfg config.Config, opts Options, view func(capacity.Sources) capacity.Sources) (*Server, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	up := cfg.Upstream()
	client := &http.Client{Transport: transport(up.ConnectTimeout, opts.Dial)}
	s := &Server{opts: opts, log: log, clock: opts.Now, metrics: newMetrics(), client: client, view: view,
		bodies: newBudget(cfg.Limits().MaxInflightBodyBytes), spills: newSpillBudget(cfg.Limits().MaxSpillBytes), unknownCaller: &holder{}, kept: intent.NewKept()}
	if s.clock == nil {
		s.clock = time.Now
	}
	s.workers, s.stopWork = context.WithCancel(context.Background())
	s.started = s.now()
	s.openSpool()
	cert, err := loadCertificate(cfg.TLS())
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.cert.Store(cert)
	// Passed probes end passive health's failure streaks and half-open ejections; the router exists
	// before the first probe runs (Start or Serve).
	s.prober = readiness.NewProber(client, targets(cfg), cfg.Readiness().Interval, cfg.Readiness().Timeout,
		readiness.WithPassed(func(tier, member string) { s.current().router.ProbePassed(tier, member, s.now()) }))
	var source routing.PressureSource // stays a nil interface without capacity tiers
	if specs := routing.PressureSpecs(cfg); len(specs) > 0 {
		c, err := scrape.NewCache(specs, client, scrape.Options{Now: s.clock, Observe: s.metrics.scraped})
		if err != nil {
			return nil, fmt.Errorf("server: pressure cache: %w", err)
		}
		s.pressure.Store(c)
		source = c
	}
	alarm := newSinkAlarm(log, sinkSummaryEvery)
	if s.decisions, s.sinkFile, err = openDecisions(cfg, opts.OpenDecisionFile, decisionlog.WithSinkHealth(s.now, alarm.observe)); err != nil {
		s.closePressure()
		return nil, err
	}
	router, err := routing.New(cfg, s.prober.State(), source, s.decisions, routing.WithHealthEvents(s.healthEvent),
		routing.WithDigest(opts.ConfigDigest), routing.WithFollowers(readinessFollower{s}, pressureFollower{s}))
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	s.gen.Store(s.newGeneration(cfg, opts.ConfigDigest, router, client, nil))
	s.applyLimits(s.current())
	s.metrics.registry.MustRegister(newHeldCollector(s), newSpoolGauge(s))
	if err := s.restoreIntent(cfg, opts.IntentFS); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.metrics.watch(func() ([]capacity.TierSpec, capacity.Sources) {
		g := s.current()
		return g.plan, g.sources
	})
	if c := s.pressure.Load(); c != nil {
		s.metrics.watchPending(c)
	}
	s.metrics.reloaded("", s.started) // startup is the first successful load
	s.metrics.buildInfo(opts.Version, opts.Revision)
	s.metrics.seed(cfg)
	if s.tracer, err = tracing.New(s.workers, cfg.Tracing(), tracing.Options{Version: opts.Version, Exporter: opts.SpanExporter}); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	s.metrics.watchTracer(s.tracer)
	s.page = statuspage.New()
	s.engine = s.routes()
	return s, nil
}

// restoreIntent reads intent_file once, validates all of it, quiesces every configured scope it
// names with its recorded reason, keeps (and logs) the valid entries it cannot apply, checks that the file's
// directory takes a write, removes (and logs) the temporary files an interrupted save left, and
// only then enables persistence. A malformed file refuses startup and is left as it is.
func (s *Server) restoreIntent(cfg config.Config, fsys intent.FS) error {
	path := cfg.IntentFile()
	if path == "" {
		return nil
	}
	if fsys == nil {
		fsys = intent.OS{}
	}
	store, doc, err := intent.Load(fsys, path)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	restored, err := intent.Restore(s.current().router.Admission(), doc)
	if err != nil {
		return fmt.Errorf("server: restoring intent: %w", err)
	}
	s.keepUnconfigured(restored.Ignored)
	s.log.Info("intent restored", "tiers", restored.Tiers, "members", restored.Members)
	if err := store.Check(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	removed, err := store.Sweep()
	if len(removed) > 0 {
		s.log.Warn("stale intent temporary files removed", "count", len(removed), "files", removed)
	}
	if err != nil {
		s.log.Warn("stale intent temporary files not all removed", "error", err)
	}
	s.intent = store
	return nil
}

func transport(connect time.Duration, dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = dial
	if dial == nil {
		t.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
	}
	// Each member keeps up to 256 idle connections, and no total bound takes them back (the default
	// clone's 100 would churn connections as soon as the members together hold more).
	t.MaxIdleConnsPerHost, t.MaxIdleConns = 256, 0
	// Every connection, idle or busy, holds one buffer each way for its whole life: 2 KiB each
	// instead of net/http's 4 saves 4 KiB on each of thousands of open streams. The price: a request
	// whose headers and body come to 2 to 4 KiB takes two writes instead of one (a larger one took
	// two already, its body skipping the buffer); a long ordinary response body is read straight into
	// the relay's own buffer.
	t.ReadBufferSize, t.WriteBufferSize = 2<<10, 2<<10
	t.Proxy = nil // members are on the declared host; never route them through an environment proxy
	return t
}

func targets(cfg config.Config) []readiness.Target {
	var out []readiness.Target
	for _, t := range cfg.Tiers() {
		for _, m := range t.Members {
			out = append(out, readiness.Target{Tier: t.ID, Member: m.ID, BaseURL: m.Endpoint, ServedModel: t.ServedModel,
				Rule: readinessRule(t.Engine)})
		}
	}
	return out
}

// readinessRule is the shape a tier's engine answers its identity probes in: TensorRT-LLM is served
// through Triton's OpenAI frontend, every other engine answers as vLLM does.
func readinessRule(engine string) readiness.Rule {
	if engine == adapter.TRTLLM {
		return readiness.RuleTriton
	}
	return readiness.RuleOpenAI
}

func (s *Server) closePressure() {
	if c := s.pressure.Load(); c != nil {
		c.Close()
	}
}

// PressureRefreshed returns a channel closed when the pressure cache next completes a refresh, or nil
// when there is no cache (no capacity tier): for tests and surfaces that follow telemetry by events.
func (s *Server) PressureRefreshed() <-chan struct{} {
	c := s.pressure.Load()
	if c == nil {
		return nil
	}
	return c.Refreshed()
}

// healthEvent writes one log line per passive-health transition: an ejection (warn), a recovery and
// an ejection the cap held back.
func (s *Server) healthEvent(ev health.Event) {
	attrs := []any{"tier", ev.Tier, "member", ev.Member, "reason", ev.Reason, "streak", ev.Streak}
	switch ev.Kind {
	case health.EventEjected:
		s.log.Warn("member ejected by passive health", append(attrs, "ejections", ev.Ejections,
			"ejection_s", ev.Duration.Seconds())...)
	case health.EventRecovered:
		s.log.Info("member recovered from passive health ejection", attrs...)
	case health.EventHeld:
		s.log.Warn("member kept in by the passive health cap", attrs...)
	}
}

// Pressure reads the cached pressure of a capacity tier without scheduling collection, for operator
// surfaces and tests.
func (s *Server) Pressure(tier string) (map[string]scheduler.Pressure, error) {
	c := s.pressure.Load()
	if c == nil {
		return nil, pressure.ErrUnknownTier
	}
	return c.Peek(tier)
}

// openDecisions builds the decision log the config describes, with its append-only JSONL file behind
// an asynchronous, bounded queue when jsonl_path is set: a stalled disk then costs dropped (counted)
// lines, never stalled requests, and health reports the sink's failures as they happen. The file is
// opened here, the queue's writer starts with Start.
func openDecisions(cfg config.Config, open func(string) (*os.File, error), health decisionlog.Option) (*decisionlog.Log, *os.File, error) {
	path := cfg.DecisionLog().JSONLPath
	if path == "" {
		log, err := routing.NewDecisionLog(cfg, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("server: decision log: %w", err)
		}
		return log, nil, nil
	}
	if open == nil {
		open = openAppend
	}
	f, err := open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("server: decision log sink: %w", err)
	}
	log, err := routing.NewDecisionLog(cfg, f, decisionlog.WithAsyncSink(decisionlog.DefaultQueueLines), health)
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("server: decision log: %w", err)
	}
	return log, f, nil
}

// Handler returns the HTTP handler, for tests and embedding.
func (s *Server) Handler() http.Handler { return s.engine }

// Decisions returns the decision log.
func (s *Server) Decisions() *decisionlog.Log { return s.decisions }

// healthNow reads the router's passive health at the server's clock, for the views.
type healthNow struct {
	router *routing.Router
	now    func() time.Time
}

func (h healthNow) Health(tier string) ([]health.MemberHealth, error) {
	return h.router.Health(tier, h.now())
}

// Admission returns the admission set of the generation in force.
func (s *Server) Admission() *admission.Set { return s.current().router.Admission() }

// Generation returns the number of the configuration generation in force: 1 at startup, one more
// per applied reload.
func (s *Server) Generation() uint64 { return s.current().number }

// ProbeNow runs one readiness round synchronously and marks the server probed. Serve calls it before
// accepting traffic, so the first requests see completed readiness instead of "unprobed".
func (s *Server) ProbeNow(ctx context.Context) {
	s.prober.ProbeAll(ctx)
	s.probed.Store(true)
}
