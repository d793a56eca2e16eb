// Package server is the router's composition root and HTTP surface: the OpenAI front door (chat
// completions, completions, Responses, embeddings, audio, models), health and readiness, and the authenticated
// admin API. New wires config, admission, readiness, routing, relay and the decision log; Serve runs the
// background workers and the listener and shuts all of it down gracefully.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/health"
	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/readiness"
	"github.com/anvil-llm/anvil/router/relay"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// Server is one router instance. Create it with New, run it with Serve (or Start and Handler), stop
// it with Close.
type Server struct {
	cfg       config.Config
	log       *slog.Logger
	router    *routing.Router
	prober    *readiness.Prober
	pressure  *scrape.Cache // nil when no tier uses the capacity strategy: no telemetry goroutines at all
	relay     *relay.Relay
	decisions *decisionlog.Log
	sinkFile  *os.File // the decision log's JSONL file, owned here; nil when none
	engine    *gin.Engine
	started   time.Time
	probed    atomic.Bool    // the first readiness round has completed
	inflight  sync.WaitGroup // handlers still running
}

// Options are the non-config dependencies of a Server.
type Options struct {
	Logger *slog.Logger // nil = discard
	// Dial opens the connections to upstreams (the relay, readiness probes and pressure scrapes);
	// nil is a net.Dialer with the configured connect timeout. Tests pass an in-memory network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// New wires a server from a validated config. It opens the decision log's file but starts nothing:
// Start (or Serve) starts the background work, Close stops it.
func New(cfg config.Config, opts Options) (*Server, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	up := cfg.Upstream()
	client := &http.Client{Transport: transport(up.ConnectTimeout, opts.Dial)}
	s := &Server{cfg: cfg, log: log, started: time.Now()}
	// Passed probes end passive health's failure streaks and half-open ejections; the router exists
	// before the first probe runs (Start or Serve).
	s.prober = readiness.NewProber(client, targets(cfg), cfg.Readiness().Interval, cfg.Readiness().Timeout,
		readiness.WithPassed(func(tier, member string) { s.router.ProbePassed(tier, member, time.Now()) }))
	var err error
	var source routing.PressureSource // stays a nil interface without capacity tiers
	if specs := routing.PressureSpecs(cfg); len(specs) > 0 {
		if s.pressure, err = scrape.NewCache(specs, client, scrape.Options{}); err != nil {
			return nil, fmt.Errorf("server: pressure cache: %w", err)
		}
		source = s.pressure
	}
	if s.decisions, s.sinkFile, err = openDecisions(cfg); err != nil {
		s.closePressure()
		return nil, err
	}
	if s.router, err = routing.New(cfg, s.prober.State(), source, s.decisions, routing.WithHealthEvents(s.healthEvent)); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.relay = relay.New(client, relay.Options{MaxResponseBytes: up.MaxResponseBytes,
		FirstByteTimeout: up.FirstByteTimeout, Timeout: up.Timeout})
	s.engine = s.routes()
	return s, nil
}

func transport(connect time.Duration, dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = dial
	if dial == nil {
		t.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
	}
	t.MaxIdleConnsPerHost = 256
	t.Proxy = nil // members are on the declared host; never route them through an environment proxy
	return t
}

func targets(cfg config.Config) []readiness.Target {
	var out []readiness.Target
	for _, t := range cfg.Tiers() {
		for _, m := range t.Members {
			out = append(out, readiness.Target{Tier: t.ID, Member: m.ID, BaseURL: m.Endpoint, ServedModel: t.ServedModel})
		}
	}
	return out
}

func (s *Server) closePressure() {
	if s.pressure != nil {
		s.pressure.Close()
	}
}

// PressureRefreshed returns a channel closed when the pressure cache next completes a refresh, or nil
// when there is no cache (no capacity tier): for tests and surfaces that follow telemetry by events.
func (s *Server) PressureRefreshed() <-chan struct{} {
	if s.pressure == nil {
		return nil
	}
	return s.pressure.Refreshed()
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
	if s.pressure == nil {
		return nil, pressure.ErrUnknownTier
	}
	return s.pressure.Peek(tier)
}

// openDecisions builds the decision log the config describes, with its append-only JSONL file behind
// an asynchronous, bounded queue when jsonl_path is set: a stalled disk then costs dropped (counted)
// lines, never stalled requests. The file is opened here, the queue's writer starts with Start.
func openDecisions(cfg config.Config) (*decisionlog.Log, *os.File, error) {
	path := cfg.DecisionLog().JSONLPath
	if path == "" {
		log, err := routing.NewDecisionLog(cfg, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("server: decision log: %w", err)
		}
		return log, nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("server: decision log sink: %w", err)
	}
	log, err := routing.NewDecisionLog(cfg, f, decisionlog.WithAsyncSink(decisionlog.DefaultQueueLines))
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("server: decision log: %w", err)
	}
	return log, f, nil
}

func (s *Server) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.Use(s.track, s.recoverPanics, withRequestID)
	e.NoRoute(func(c *gin.Context) { abort(c, errNotFound) })
	e.NoMethod(func(c *gin.Context) { abort(c, errMethod) })

	e.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/readyz", s.readyz)

	v1 := e.Group("/v1", requireToken(s.cfg.CallerTokens(), errUnauthenticated))
	v1.POST("/chat/completions", s.proxy(routing.ChatCompletions))
	v1.POST("/completions", s.proxy(routing.Completions))
	v1.POST("/responses", s.proxy(routing.Responses))
	v1.POST("/embeddings", s.proxy(routing.Embeddings))
	v1.POST("/audio/transcriptions", s.audioForm(routing.AudioTranscriptions))
	v1.POST("/audio/translations", s.audioForm(routing.AudioTranslations))
	v1.POST("/audio/speech", s.proxy(routing.AudioSpeech))
	v1.GET("/models", s.models)

	var admin []config.Secret
	if t := s.cfg.AdminToken(); !t.IsZero() {
		admin = []config.Secret{t}
	}
	a := e.Group("/admin/v1", requireToken(admin, errForbiddenAdmin))
	a.GET("/admission", s.admissionState)
	a.GET("/decisions", s.recentDecisions)
	a.GET("/decisions/summary", s.decisionSummary)
	a.POST("/transition", s.transition)
	return e
}

// recoverPanics turns a handler panic into a 500 when nothing was written yet; deferred lease releases
// have already run by the time it recovers.
func (s *Server) recoverPanics(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.Error("handler panic", "request_id", requestID(c), "path", c.FullPath())
			if c.Writer.Written() {
				// A response (a stream, say) is under way: abort the connection so the caller sees a
				// broken response, never a clean end.
				panic(http.ErrAbortHandler)
			}
			abort(c, errInternal)
		}
	}()
	c.Next()
}

// Handler returns the HTTP handler, for tests and embedding.
func (s *Server) Handler() http.Handler { return s.engine }

// Decisions returns the decision log.
func (s *Server) Decisions() *decisionlog.Log { return s.decisions }

// Admission returns the admission set.
func (s *Server) Admission() *admission.Set { return s.router.Admission() }

// ProbeNow runs one readiness round synchronously and marks the server probed. Serve calls it before
// accepting traffic, so the first requests see completed readiness instead of "unprobed".
func (s *Server) ProbeNow(ctx context.Context) {
	s.prober.ProbeAll(ctx)
	s.probed.Store(true)
}

// Start starts the background work that needs no listener: the decision log's file writer. Serve
// calls it; embedders that serve Handler themselves call it once. The readiness prober runs in Serve,
// and the pressure cache starts its workers on first use.
func (s *Server) Start() { s.decisions.Start() }

// Serve runs the readiness prober and serves on ln until ctx is done, then shuts down gracefully: stop
// accepting, let in-flight requests finish within the configured grace, flush the decision sink, stop
// the background workers.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	workers, stopWorkers := context.WithCancel(context.Background())
	defer stopWorkers()
	s.Start()
	s.ProbeNow(ctx)
	proberDone := make(chan struct{})
	go func() {
		defer close(proberDone)
		s.prober.Run(workers)
	}()

	srv := &http.Server{Handler: s.engine, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	served := make(chan error, 1)
	go func() {
		if tls := s.cfg.TLS(); tls.Enabled() {
			served <- srv.ServeTLS(ln, tls.CertFile, tls.KeyFile)
		} else {
			served <- srv.Serve(ln)
		}
	}()
	s.log.Info("serving", "addr", ln.Addr().String(), "tls", s.cfg.TLS().Enabled())

	var err error
	select {
	case err = <-served:
		_ = srv.Close() // the listener failed: drop what is left, then wind down like a shutdown
	case <-ctx.Done():
		grace, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace())
		err = srv.Shutdown(grace)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			s.log.Warn("shutdown grace expired; closing remaining connections")
			err = srv.Close()
		}
		<-served
	}
	// Closed connections cancel their requests, but handlers still release leases and write their
	// decision records; the sink closes only after the last one.
	s.waitHandlers()
	stopWorkers()
	<-proberDone
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// handlerDrainBound bounds how long shutdown waits for handlers whose connections were already closed;
// they only have their own deferred release and record left to run.
const handlerDrainBound = 10 * time.Second

func (s *Server) waitHandlers() {
	done := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(handlerDrainBound):
		s.log.Error("handlers still running after shutdown; closing the decision sink anyway")
	}
}

// track counts in-flight handlers so shutdown can wait for their deferred work.
func (s *Server) track(c *gin.Context) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	c.Next()
}

// Close stops the pressure workers, writes out and closes the decision log's file. It is safe to call
// more than once.
func (s *Server) Close() error {
	s.closePressure()
	err := s.decisions.Close()
	if s.sinkFile != nil {
		if cerr := s.sinkFile.Close(); err == nil && !errors.Is(cerr, os.ErrClosed) {
			err = cerr
		}
		st := s.decisions.Stats()
		if lost := st.SinkDropped + st.SinkErrors + st.SinkAfterClose; lost > 0 {
			s.log.Warn("decision sink lost lines", "dropped", st.SinkDropped, "write_errors", st.SinkErrors,
				"after_close", st.SinkAfterClose)
		}
	}
	return err
}
