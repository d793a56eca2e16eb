// Package watch is serve --watch: it polls a fingerprint of the configuration (the file and every
// file it names) and calls a reload when the fingerprint has moved to a new value and held it for two
// polls in a row. The two-poll rule is what keeps a half-written file from ever being applied: a
// file still being written reads differently from one poll to the next, and a reload is attempted
// only once it has stopped changing. A Kubernetes ConfigMap volume (which swaps a ..data symlink
// atomically) and an editor writing in place both settle the same way.
//
// Core holds the decision and nothing else (no clock, no I/O), so it is tested by passing values;
// Watcher is the shell that reads the clock, polls and calls the reload.
package watch

import (
	"context"
	"errors"
	"time"
)

// Bounds of the poll interval; DefaultInterval is serve --watch-interval's default.
const (
	DefaultInterval = 2 * time.Second
	MinInterval     = 100 * time.Millisecond
	MaxInterval     = time.Hour
)

// ErrInterval is returned by New for an interval outside MinInterval-MaxInterval.
var ErrInterval = errors.New("watch interval must be 100ms-1h")

// Core decides, one fingerprint at a time, when to reload. current is the fingerprint of the
// configuration in force; a different fingerprint seen twice in a row is due for a reload, unless a
// reload of that very fingerprint was refused already (the file must change again first: retrying
// the same bytes would only fail the same way).
type Core struct {
	current string
	pending string // the new fingerprint seen on the last poll, "" for none
	refused string // the last fingerprint whose reload was refused
}

// NewCore starts from the fingerprint of the configuration in force.
func NewCore(current string) *Core { return &Core{current: current} }

// Observe takes one poll's fingerprint and reports whether to reload now.
func (c *Core) Observe(fp string) bool {
	if fp == c.current {
		c.pending = ""
		return false
	}
	if fp != c.pending {
		c.pending = fp // first sighting: the file may still be being written
		return false
	}
	return fp != c.refused
}

// Reloaded records the outcome of the reload Observe asked for at fingerprint fp.
func (c *Core) Reloaded(fp string, err error) {
	if err != nil {
		c.refused = fp
		return
	}
	c.current, c.pending, c.refused = fp, "", ""
}

// Fingerprinter is what the watcher polls: load.Source satisfies it. Its only error is ctx's.
type Fingerprinter interface {
	Fingerprint(ctx context.Context) (string, error)
}

// Watcher polls a Fingerprinter every interval and calls reload as its Core decides.
type Watcher struct {
	src      Fingerprinter
	reload   func(context.Context) error
	interval time.Duration
	core     *Core
}

// New returns a watcher starting from current (the fingerprint of the configuration loaded at
// start-up, load.Loaded.Fingerprint). reload is the same reload SIGHUP and the admin endpoint run;
// its error means the reload was refused and nothing changed.
func New(current string, src Fingerprinter, reload func(context.Context) error, interval time.Duration) (*Watcher, error) {
	if interval < MinInterval || interval > MaxInterval {
		return nil, ErrInterval
	}
	return &Watcher{src: src, reload: reload, interval: interval, core: NewCore(current)}, nil
}

// Poll takes one fingerprint and, when the Core says so, runs the reload. It reports whether a
// reload ran and, if so, its error; a non-nil error with false is the fingerprint's (ctx's) own.
func (w *Watcher) Poll(ctx context.Context) (bool, error) {
	fp, err := w.src.Fingerprint(ctx)
	if err != nil {
		return false, err
	}
	if !w.core.Observe(fp) {
		return false, nil
	}
	err = w.reload(ctx)
	w.core.Reloaded(fp, err)
	return true, err
}

// Run polls every interval until ctx ends, then returns nil. A refused reload does not stop it: the
// reload reports and counts its own refusals, and the next change of the file is tried again.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := w.Poll(ctx); err != nil && ctx.Err() != nil {
				return nil
			}
		}
	}
}
