package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/relay"
)

// Start starts the background work that needs no listener: the decision log's file writer. Serve
// calls it; embedders that serve Handler themselves call it once. The readiness prober runs in Serve,
// and the pressure cache starts its workers on first use.
func (s *Server) Start() { s.decisions.Start() }

// Serve runs the readiness prober and serves on ln until ctx is done, then shuts down gracefully: stop
// accepting, let in-flight requests finish within the configured grace, flush the decision sink, stop
// the background workers. Requests still running when the grace ends are cut: their contexts end with
// the cause relay.ErrShutdown, so each answers its caller (a 503, or an in-band error event mid-stream)
// and is recorded as outcome shutdown; then the remaining connections are closed.
// With metrics.listen (or Options.MetricsListener) it also serves /metrics
// alone, without a token, on that second listener, and stops it with the first.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	mln, err := s.metricsListener()
	if err != nil {
		_ = ln.Close()
		_ = s.Close()
		return err
	}
	workers, stopWorkers := context.WithCancel(context.Background())
	defer stopWorkers()
	s.Start()
	s.ProbeNow(ctx)
	proberDone := make(chan struct{})
	go func() {
		defer close(proberDone)
		s.prober.Run(workers)
	}()

	// Every request's context derives from base: cutting it is how a shutdown past its grace tells the
	// relay (and so the record) that the router, not the caller, ended a request.
	base, cut := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cut(nil)
	srv := &http.Server{Handler: s.engine, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: bodyReadTimeout,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return base }}
	served, useTLS := s.serveHTTP(srv, ln)
	s.log.Info("serving", "addr", ln.Addr().String(), "tls", useTLS)
	stopMetrics := s.serveMetrics(ctx, mln)

	shutdown := false
	select {
	case err = <-served:
		_ = srv.Close() // the listener failed: drop what is left, then wind down like a shutdown
	case <-ctx.Done():
		shutdown = true
		err = s.shutdown(srv, cut)
		<-served
	}
	stopMetrics()
	// Closed connections cancel their requests, but handlers still release leases and write their
	// decision records; the sink closes only after the last one.
	s.waitHandlers()
	if shutdown {
		s.logShutdownFinished()
	}
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

// serveHTTP serves srv on ln in a goroutine, over TLS when a certificate is in force (the one in
// force answers each handshake: every reload re-reads it); the channel gets what Serve returned.
func (s *Server) serveHTTP(srv *http.Server, ln net.Listener) (<-chan error, bool) {
	served := make(chan error, 1)
	useTLS := s.cert.Load() != nil
	go func() {
		if useTLS {
			srv.TLSConfig = &tls.Config{GetCertificate: s.certificate, MinVersion: tls.VersionTLS12}
			served <- srv.ServeTLS(ln, "", "")
		} else {
			served <- srv.Serve(ln)
		}
	}()
	return served, useTLS
}

// shutdown stops srv within the configured grace. Past it, it cuts the requests still running
// (their contexts end with the cause relay.ErrShutdown) and closes their connections once they have
// answered.
func (s *Server) shutdown(srv *http.Server, cut context.CancelCauseFunc) error {
	s.logShutdownStarted(s.current().cfg.ShutdownGrace())
	s.fixTraceDeadline(time.Now())
	grace, cancel := context.WithTimeout(context.Background(), s.current().cfg.ShutdownGrace())
	err := srv.Shutdown(grace)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	s.log.Warn("shutdown grace expired; cutting the requests still running")
	cut(relay.ErrShutdown)
	// Each cut request answers its caller before its connection closes: a second Shutdown waits for
	// every connection to go idle, which happens only once net/http has flushed the handler's
	// buffered answer (closing as soon as the handlers return would drop an unflushed 503). A handler
	// that cannot end on its own (reading a stalled caller's body) ends when Close drops its
	// connection.
	drain, cancel := context.WithTimeout(context.Background(), handlerDrainBound)
	defer cancel()
	if errors.Is(srv.Shutdown(drain), context.DeadlineExceeded) {
		s.log.Warn("cut requests still running; closing their connections")
	}
	return srv.Close()
}

// metricsListener is the listener of the metrics-only server: the one the options hand over, else
// metrics.listen bound now, else none.
func (s *Server) metricsListener() (net.Listener, error) {
	if s.opts.MetricsListener != nil {
		return s.opts.MetricsListener, nil
	}
	addr := s.current().cfg.Metrics().Listen
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server: metrics listener: %w", err)
	}
	return ln, nil
}

// serveMetrics serves GET /metrics alone on ln (nil: nothing) and returns the function that stops it.
// It carries no admin token: metrics.listen is meant for a private interface.
func (s *Server) serveMetrics(ctx context.Context, ln net.Listener) (stop func()) {
	if ln == nil {
		return func() {}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.handler(s.log))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics listener failed")
		}
	}()
	s.log.Info("serving metrics", "addr", ln.Addr().String())
	return func() {
		grace, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(grace) != nil {
			_ = srv.Close()
		}
		<-done
	}
}

// handlerDrainBound bounds how long shutdown waits for handlers whose connections were already closed;
// they only have their own deferred release and record left to run.
const handlerDrainBound = 10 * time.Second

func (s *Server) waitHandlers() {
	if !s.handlersDone(handlerDrainBound) {
		s.log.Error("handlers still running after shutdown; closing the decision sink anyway")
	}
}

// handlersDone waits up to bound for every handler to return and reports whether they all did.
func (s *Server) handlersDone(bound time.Duration) bool {
	done := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(done)
	}()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// track counts in-flight handlers so shutdown can wait for their deferred work.
func (s *Server) track(c *gin.Context) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	c.Next()
}

// Close stops the pressure workers, writes out and closes the decision log's file, then flushes the
// spans still queued (within what is left of the shutdown deadline, at most the trace flush cap). It
// is safe to call more than once.
func (s *Server) Close() error {
	s.stopWork()
	s.background.Wait()
	s.closePressure()
	err := s.decisions.Close()
	if s.spool != nil {
		// The last word for held audio files: any a handler still running did not remove.
		err = errors.Join(err, s.spool.Close())
	}
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
	s.shutdownTracer() // last, and bounded: a stalled collector never holds the decision log's tail
	return err
}
