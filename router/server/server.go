// Package server is the router's composition root and HTTP surface: the OpenAI front door (chat
// completions, completions, Responses, embeddings, models), health and readiness, and the authenticated
// admin API. New wires config, admission, readiness, routing, relay and the decision log; Serve runs the
// background workers and the listener and shuts all of it down gracefully.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/readiness"
	"github.com/anvil-llm/anvil/router/relay"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// Server is one router instance. Create it with New, run it with Serve or Run.
type Server struct {
	cfg       config.Config
	log       *slog.Logger
	router    *routing.Router
	prober    *readiness.Prober
	pressure  *scrape.Cache // nil when no tier uses the capacity strategy: no telemetry goroutines at all
	relay     *relay.Relay
	decisions *decisionlog.Log
	sink      *fileSink // the JSONL sink, owned here; nil when none
	engine    *gin.Engine
	started   time.Time
	probed    atomic.Bool    // the first readiness round has completed
	inflight  sync.WaitGroup // handlers still running
}

// Options are the non-config dependencies of a Server.
type Options struct {
	Logger *slog.Logger // nil = discard
}

// New wires a server from a validated config. It opens the decision sink but starts nothing.
func New(cfg config.Config, opts Options) (*Server, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	adm, err := admission.New(routing.Specs(cfg))
	if err != nil {
		return nil, fmt.Errorf("server: admission: %w", err)
	}
	up := cfg.Upstream()
	client := &http.Client{Transport: transport(up.ConnectTimeout)}
	prober := readiness.NewProber(client, targets(cfg), cfg.Readiness().Interval, cfg.Readiness().Timeout)
	s := &Server{cfg: cfg, log: log, prober: prober, started: time.Now()}
	var source routing.PressureSource // stays a nil interface without capacity tiers
	if specs := pressureSpecs(cfg); len(specs) > 0 {
		if s.pressure, err = scrape.NewCache(specs, client, scrape.Options{}); err != nil {
			return nil, fmt.Errorf("server: pressure cache: %w", err)
		}
		source = s.pressure
	}
	if s.router, err = routing.New(cfg, adm, prober.State(), source); err != nil {
		s.closePressure()
		return nil, err
	}
	s.relay = relay.New(client, relay.Options{MaxResponseBytes: up.MaxResponseBytes,
		FirstByteTimeout: up.FirstByteTimeout, Timeout: up.Timeout})
	if s.decisions, s.sink, err = openDecisions(cfg); err != nil {
		s.closePressure()
		return nil, err
	}
	s.engine = s.routes()
	return s, nil
}

func transport(connect time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
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

// pressureSpecs registers every capacity tier's members with the pressure cache; the member ceiling is
// the scheduler capacity that request pressure is normalized against.
func pressureSpecs(cfg config.Config) []pressure.TierSpec {
	var out []pressure.TierSpec
	for _, t := range cfg.Tiers() {
		if t.Strategy != config.StrategyCapacity {
			continue
		}
		spec := pressure.TierSpec{ID: t.ID, ServedModel: t.ServedModel}
		for _, m := range t.Members {
			spec.Members = append(spec.Members, pressure.MemberSpec{ID: m.ID, Endpoint: m.Endpoint, Capacity: m.MaxConcurrency})
		}
		out = append(out, spec)
	}
	return out
}

func (s *Server) closePressure() {
	if s.pressure != nil {
		s.pressure.Close()
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

// fileSink is the decision log's file behind its write queue.
type fileSink struct {
	file  *os.File
	queue *asyncSink
}

// Close writes out the queue, then closes the file. Safe to call more than once.
func (f *fileSink) Close() error {
	f.queue.Close()
	if err := f.file.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// openDecisions builds the decision log and its optional append-only JSONL sink. Capacity evidence is
// checked against configured membership and ceilings before it is stored.
func openDecisions(cfg config.Config) (*decisionlog.Log, *fileSink, error) {
	dl := cfg.DecisionLog()
	membership := map[string]map[string]int64{}
	for _, t := range cfg.Tiers() {
		if t.Strategy != config.StrategyCapacity {
			continue
		}
		m := map[string]int64{}
		for _, mem := range t.Members {
			m[mem.ID] = mem.MaxConcurrency
		}
		membership[t.ID] = m
	}
	opts := []decisionlog.Option{decisionlog.WithMembership(membership)}
	if dl.MaxLineBytes > 0 {
		opts = append(opts, decisionlog.WithMaxLineBytes(dl.MaxLineBytes))
	}
	var sink *fileSink
	var w io.Writer
	if dl.JSONLPath != "" {
		f, err := os.OpenFile(dl.JSONLPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("server: decision log sink: %w", err)
		}
		sink = &fileSink{file: f, queue: newAsyncSink(f)}
		w = sink.queue
	}
	log, err := decisionlog.New(dl.RingSize, w, opts...)
	if err != nil {
		if sink != nil {
			_ = sink.Close()
		}
		return nil, nil, fmt.Errorf("server: decision log: %w", err)
	}
	return log, sink, nil
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

// Serve runs the readiness prober and serves on ln until ctx is done, then shuts down gracefully: stop
// accepting, let in-flight requests finish within the configured grace, flush the decision sink, stop
// the background workers.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	workers, stopWorkers := context.WithCancel(context.Background())
	defer stopWorkers()
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

// Close stops the pressure workers, flushes and closes the decision sink. It is safe to call more
// than once.
func (s *Server) Close() error {
	s.closePressure()
	err := s.decisions.Close()
	if s.sink != nil {
		if cerr := s.sink.Close(); err == nil {
			err = cerr
		}
		if n, f := s.sink.queue.dropped.Load(), s.sink.queue.failed.Load(); n+f > 0 {
			s.log.Warn("decision sink lost lines", "dropped", n, "write_errors", f)
		}
	}
	return err
}
