// Package pipenet is an in-memory network of real HTTP servers and clients for tests that run inside
// a testing/synctest bubble. Every connection is a net.Pipe, so a goroutine blocked on a read is
// durably blocked and fake time can advance past it; servers and clients are real net/http, only the
// sockets are in memory. Tests use it where loopback TCP would make time real.
package pipenet

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
)

// Net is one in-memory network. Create it inside the bubble that uses it, and Close it before the
// bubble ends, so that no server or connection goroutine outlives it.
type Net struct {
	mu        sync.Mutex
	listeners map[string]*listener // by host:port
	servers   []*http.Server
	transport *http.Transport
}

// New returns an empty network.
func New() *Net {
	n := &Net{listeners: map[string]*listener{}}
	n.transport = &http.Transport{DialContext: n.Dial, ForceAttemptHTTP2: false}
	return n
}

// Serve starts a real HTTP server for h at addr ("member-a:80") and returns its base URL.
func (n *Net) Serve(addr string, h http.Handler) string {
	l := &listener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
	srv := &http.Server{Handler: h}
	n.mu.Lock()
	n.listeners[addr] = l
	n.servers = append(n.servers, srv)
	n.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
	return "http://" + addr
}

// Listen returns a listener at addr for a server the caller runs itself (the router's Serve); Dial
// reaches it like the servers Serve starts.
func (n *Net) Listen(addr string) net.Listener {
	l := &listener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
	n.mu.Lock()
	n.listeners[addr] = l
	n.mu.Unlock()
	return l
}

// Client returns an HTTP client on the network.
func (n *Net) Client() *http.Client { return &http.Client{Transport: n.transport} }

// Dial connects to a server started with Serve; an address nobody serves refuses the connection.
func (n *Net) Dial(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.listeners[addr]
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: errors.New("connection refused")}
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops every server and drops the client's idle connections.
func (n *Net) Close() {
	n.mu.Lock()
	servers := n.servers
	n.mu.Unlock()
	for _, srv := range servers {
		_ = srv.Close()
	}
	n.transport.CloseIdleConnections()
}

type listener struct {
	addr   string
	conns  chan net.Conn
	once   sync.Once
	closed chan struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *listener) Addr() net.Addr { return addr(l.addr) }

type addr string

func (a addr) Network() string { return "pipe" }
func (a addr) String() string  { return string(a) }
