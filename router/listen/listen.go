// Package listen opens the router's listeners: the sockets systemd passes in (socket activation,
// the LISTEN_FDS protocol), matched by their FileDescriptorName, or else fresh ones bound on the
// config's addresses. A socket systemd holds outlives the router process, so a restart of the
// service refuses no connection: connections that arrive while the old process drains or while no
// process runs wait in the kernel's accept backlog for the next one.
//
// It is a shell (it does I/O) and the only package that imports go-systemd.
package listen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"

	"github.com/coreos/go-systemd/v22/activation"
)

// The FileDescriptorName of each socket the router takes from systemd (deploy/systemd's units).
const (
	APIName     = "anvil-api"     // the front door: OpenAI API, admin API, status page
	MetricsName = "anvil-metrics" // GET /metrics alone (metrics.listen)
)

// ErrActivation reports sockets passed by systemd that the router cannot use: an unknown or
// repeated name, or a descriptor that is not a listening stream socket. Startup is refused.
var ErrActivation = errors.New("listen: socket activation")

// Addrs are the config's addresses, bound when systemd passes no socket for them.
type Addrs struct {
	API     string // listen (host:port)
	Metrics string // metrics.listen; "" = no metrics listener unless systemd passes one
}

// Listeners are the router's open listeners. The caller owns them (closes them, or hands them to
// a server that does).
type Listeners struct {
	API     net.Listener
	Metrics net.Listener // nil: none
	// Activated names the listeners that came from systemd, in the order systemd passed them.
	Activated []string
}

// Close closes every listener that is open.
func (l Listeners) Close() error {
	var errs []error
	for _, ln := range []net.Listener{l.API, l.Metrics} {
		if ln != nil {
			errs = append(errs, ln.Close())
		}
	}
	return errors.Join(errs...)
}

// Open returns the listeners systemd passed to this process, and binds the rest on a's addresses.
// It consumes the activation environment (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES), so a child
// process never inherits it. When systemd passes sockets, every one must be named APIName or
// MetricsName; the socket unit's address then wins over the config's for that listener.
func Open(ctx context.Context, a Addrs) (Listeners, error) {
	return open(ctx, activation.Files(true), a)
}

// open adopts files, in the order systemd passed them (the order of the socket units' listen
// lines and then of Sockets=), and binds what they do not cover.
func open(ctx context.Context, files []*os.File, a Addrs) (l Listeners, err error) {
	defer func() {
		for _, f := range files {
			_ = f.Close() // an adopted listener holds its own duplicate of the descriptor
		}
		if err != nil {
			_ = l.Close()
			l = Listeners{}
		}
	}()
	for _, f := range files {
		name := f.Name()
		var slot *net.Listener
		switch name {
		case APIName:
			slot = &l.API
		case MetricsName:
			slot = &l.Metrics
		default:
			return l, fmt.Errorf("%w: socket %q: the router takes only sockets named %q or %q (FileDescriptorName=)",
				ErrActivation, name, APIName, MetricsName)
		}
		if *slot != nil {
			return l, fmt.Errorf("%w: socket %q passed more than once", ErrActivation, name)
		}
		ln, ferr := net.FileListener(f)
		if ferr != nil {
			return l, fmt.Errorf("%w: socket %q is not a listening stream socket: %w", ErrActivation, name, ferr)
		}
		*slot = ln
		l.Activated = append(l.Activated, name)
	}
	var lc net.ListenConfig
	if l.API == nil {
		if l.API, err = lc.Listen(ctx, "tcp", a.API); err != nil {
			return l, fmt.Errorf("listen: %w", err)
		}
	}
	if l.Metrics == nil && a.Metrics != "" {
		if l.Metrics, err = lc.Listen(ctx, "tcp", a.Metrics); err != nil {
			return l, fmt.Errorf("listen: metrics listener: %w", err)
		}
	}
	return l, nil
}

// IsActivated reports whether the listener named name came from systemd.
func (l Listeners) IsActivated(name string) bool { return slices.Contains(l.Activated, name) }
