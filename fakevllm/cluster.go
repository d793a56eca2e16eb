package fakevllm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// MaxMembers bounds a cluster.
const MaxMembers = 256

// Member is one fake vLLM member serving on its own listener, with its own
// engine.
type Member struct {
	index  int
	url    string
	srv    *Server
	hs     *http.Server
	served chan struct{} // closed when Serve has returned
}

// Index is the member's position in its cluster (0-based).
func (m *Member) Index() int { return m.index }

// URL is the member's base URL, e.g. "http://127.0.0.1:9001".
func (m *Member) URL() string { return m.url }

// Server is the member's server, for faults and metrics.
func (m *Member) Server() *Server { return m.srv }

// Shutdown stops accepting connections, lets in-flight requests finish until
// ctx ends (hung /metrics scrapes get 503 at once), then closes everything.
// It is safe to call after Close, and Close after it.
func (m *Member) Shutdown(ctx context.Context) error {
	err := m.hs.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, m.hs.Close())
	}
	m.srv.Close()
	<-m.served
	return err
}

// Close stops the member at once: connections are closed, streams cut.
func (m *Member) Close() error {
	err := m.hs.Close()
	m.srv.Close()
	<-m.served
	return err
}

// Cluster is a set of members started together.
type Cluster struct {
	members []*Member
}

// StartCluster starts n members (1 to MaxMembers) on ephemeral 127.0.0.1
// ports. Member i runs NewServer(opts) with its seed derived from opts.Seed
// and i, so members differ but every run is reproducible.
func StartCluster(ctx context.Context, opts Options, n int) (*Cluster, error) {
	if n < 1 || n > MaxMembers {
		return nil, fmt.Errorf("%w: members must be from 1 to %d", ErrInvalidOptions, MaxMembers)
	}
	var lc net.ListenConfig
	lns := make([]net.Listener, 0, n)
	for range n {
		ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			closeListeners(lns)
			return nil, fmt.Errorf("fakevllm: listen: %w", err)
		}
		lns = append(lns, ln)
	}
	return StartClusterOn(opts, lns)
}

// StartClusterOn starts one member per listener (it takes ownership of them,
// closing them all on error).
func StartClusterOn(opts Options, lns []net.Listener) (*Cluster, error) {
	if len(lns) < 1 || len(lns) > MaxMembers {
		closeListeners(lns)
		return nil, fmt.Errorf("%w: members must be from 1 to %d", ErrInvalidOptions, MaxMembers)
	}
	c := &Cluster{}
	for i, ln := range lns {
		o := opts
		o.Seed = deriveSeed(opts.Seed, uint64(i)+1<<32)
		m, err := startMember(i, o, ln)
		if err != nil {
			closeListeners(lns[i:])
			_ = c.Close()
			return nil, err
		}
		c.members = append(c.members, m)
	}
	return c, nil
}

func startMember(i int, opts Options, ln net.Listener) (*Member, error) {
	srv, err := NewServer(opts)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(srv.log.Handler(), slog.LevelWarn),
	}
	// On Shutdown, hung /metrics handlers return and new generation requests
	// are refused, while streams in flight run to their end.
	hs.RegisterOnShutdown(srv.beginClose)
	m := &Member{index: i, url: "http://" + ln.Addr().String(), srv: srv, hs: hs, served: make(chan struct{})}
	go func() {
		defer close(m.served)
		// Serve returns http.ErrServerClosed after Shutdown or Close; any
		// other error (the listener failed) shows as refused connections.
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			srv.log.Error("fakevllm member stopped serving", "member", i, "err", err)
		}
	}()
	return m, nil
}

func closeListeners(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// Members returns the members in index order.
func (c *Cluster) Members() []*Member { return append([]*Member(nil), c.members...) }

// URLs returns the members' base URLs in index order.
func (c *Cluster) URLs() []string {
	urls := make([]string, len(c.members))
	for i, m := range c.members {
		urls[i] = m.url
	}
	return urls
}

// Shutdown shuts every member down gracefully (see Member.Shutdown).
func (c *Cluster) Shutdown(ctx context.Context) error {
	errs := make([]error, len(c.members))
	done := make(chan struct{}, len(c.members))
	for i, m := range c.members {
		go func() {
			errs[i] = m.Shutdown(ctx)
			done <- struct{}{}
		}()
	}
	for range c.members {
		<-done
	}
	return errors.Join(errs...)
}

// Close stops every member at once.
func (c *Cluster) Close() error {
	var errs []error
	for _, m := range c.members {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}
