package server

import (
	"context"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/config"
)

// NewWithViews is New with the views' sources wrapped by view: tests watch (or fail) every read the
// capacity JSON and the metrics collector make.
func NewWithViews(cfg config.Config, opts Options, view func(capacity.Sources) capacity.Sources) (*Server, error) {
	return newServer(cfg, opts, view)
}

// Registry is the server's own Prometheus registry.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.registry }

// BindMetrics binds the metrics listener as Serve would.
func (s *Server) BindMetrics() (net.Listener, error) { return s.metricsListener() }

// HeldBudgets is what the in-flight body budget and the spill budget hold now.
func (s *Server) HeldBudgets() (memory, disk int64) { return s.bodies.inUse(), s.spills.inUse() }

// SpoolBytes is what the spool's open files hold now (anvil_router_spool_bytes).
func (s *Server) SpoolBytes() int64 { return s.spool.Bytes() }

// FlushTraces exports every span ended so far (tracing on), so a test reads them without waiting
// for the batch timeout.
func (s *Server) FlushTraces(ctx context.Context) error {
	if s.tracer == nil {
		return nil
	}
	return s.tracer.ForceFlush(ctx)
}
