package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/intent"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/routing"
)

// Live reload. Reload is the one entry point: SIGHUP, POST /admin/v1/config/reload and any watcher
// all end here (through ReloadFile, which first reads the file with Options.Load). A reload is
// serialized with other reloads, never with requests: it builds and validates the next generation
// completely (config.RestartRequired's refusal, the TLS files, admission, passive health, readiness
// and pressure staged), then publishes it in one step per piece and swaps the server's generation
// pointer. A refused reload changes nothing. The changes it answers and records are config.Diff's
// lines: key paths, list entries by ID, never a secret, endpoint or path value.

// ErrReloadRefused wraps every refusal of a reload: the running configuration keeps serving.
var ErrReloadRefused = errors.New("server: reload refused")

// LoadFunc reads and validates the config file with exactly the rules of startup and returns it
// with its digest (sha256 hex of the bytes it parsed). Errors carry the configuration error's text,
// as config check prints it.
type LoadFunc func(ctx context.Context) (config.Config, string, error)

// reloadState is what GET /admin/v1/config reports about reloads.
type reloadState struct {
	mu       sync.Mutex // also serializes reloads
	last     *manage.LastReload
	lastFail string // the last refusal's text, logged once per distinct failure
}

// Reload applies cfg (digest: the sha256 hex of the file it came from) as the next generation, or
// answers "unchanged" when digest equals the running configuration's. A refusal wraps
// ErrReloadRefused and changes nothing. Every attempt is recorded for GET /admin/v1/config and
// counted in anvil_router_config_reloads_total.
func (s *Server) Reload(ctx context.Context, cfg config.Config, digest string) (manage.ReloadResponse, error) {
	s.reloads.mu.Lock()
	defer s.reloads.mu.Unlock()
	return s.reloadLocked(ctx, cfg, digest)
}

// ReloadFile reads the config file with Options.Load and reloads it: the one path SIGHUP and the
// reload endpoint share. A file that cannot be read or validated is a refused reload.
func (s *Server) ReloadFile(ctx context.Context) (manage.ReloadResponse, error) {
	s.reloads.mu.Lock()
	defer s.reloads.mu.Unlock()
	if s.opts.Load == nil {
		return manage.ReloadResponse{}, s.refused(errNoConfigFile)
	}
	cfg, digest, err := s.opts.Load(ctx)
	if err != nil {
		return manage.ReloadResponse{}, s.refused(err)
	}
	return s.reloadLocked(ctx, cfg, digest)
}

var errNoConfigFile = errors.New("the router was not started from a config file")

func (s *Server) reloadLocked(ctx context.Context, cfg config.Config, digest string) (manage.ReloadResponse, error) {
	cur := s.current()
	if digest != "" && digest == cur.digest && sameFiles(cur.cfg, cfg) {
		// The file is the same, but its certificate files may have been rotated under it: they are
		// re-read on every reload.
		cert, err := loadCertificate(cfg.TLS())
		if err != nil {
			return manage.ReloadResponse{}, s.refused(err)
		}
		s.cert.Store(cert)
		s.recordReload(manage.ReloadUnchanged, nil, nil)
		return manage.ReloadResponse{Result: manage.ReloadUnchanged, Digest: digest, Generation: cur.number,
			Changes: []string{}}, nil
	}
	next, changes, commit, err := s.prepare(ctx, cur, cfg, digest)
	if err != nil {
		return manage.ReloadResponse{}, s.refused(err)
	}
	before := intent.FromSnapshots(cur.router.Admission().Snapshots()) // the intent of scopes it may remove
	if err := next.router.Publish(); err != nil {
		return manage.ReloadResponse{}, s.refused(err)
	}
	keptChanged := s.carryIntent(before, next.router.Admission())
	commit()
	s.gen.Store(next)
	cur.next.Store(next)
	close(cur.done)
	if keptChanged {
		_ = s.saveIntent() // a failure is logged; the intent stands in memory
	}
	s.recordReload(manage.ReloadApplied, changes, nil)
	s.log.Info("config reloaded", "generation", next.number, "digest", shortDigest(digest), "changes", len(changes))
	return manage.ReloadResponse{Result: manage.ReloadApplied, Digest: digest, Generation: next.number,
		Changes: changes}, nil
}

// sameFiles reports whether the token files a config names hold what the running generation
// loaded (config.Diff lists no change): the config file's digest alone cannot tell that a token file
// was rotated under it, and such a reload must apply (serve --watch polls those files for exactly
// that). The certificate is re-read by every reload anyway, an unchanged one included.
func sameFiles(running, next config.Config) bool { return len(config.Diff(running, next)) == 0 }

// prepare builds and validates the next generation without changing anything; commit applies the
// server-level parts (the body budget, the certificate, a new pressure cache) once it is published.
func (s *Server) prepare(ctx context.Context, cur *generation, cfg config.Config, digest string) (*generation, []string, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	if err := config.RestartRequired(cur.cfg, cfg); err != nil {
		return nil, nil, nil, err
	}
	changes := diffLines(cur.cfg, cfg)
	cert, err := loadCertificate(cfg.TLS())
	if err != nil {
		return nil, nil, nil, err
	}
	var opts []routing.Option
	var cache *scrape.Cache // created here when the first capacity tier arrives
	if specs := routing.PressureSpecs(cfg); len(specs) > 0 && s.pressure.Load() == nil {
		if cache, err = scrape.NewCache(specs, s.client, scrape.Options{Now: s.clock, Observe: s.metrics.scraped}); err != nil {
			return nil, nil, nil, fmt.Errorf("pressure cache: %w", err)
		}
		opts = append(opts, routing.WithPressure(cache))
	}
	router, err := cur.router.Next(cfg, digest, opts...)
	if err != nil {
		if cache != nil {
			cache.Close()
		}
		return nil, nil, nil, err
	}
	client := cur.client
	if cfg.Upstream().ConnectTimeout != cur.cfg.Upstream().ConnectTimeout {
		client = &http.Client{Transport: transport(cfg.Upstream().ConnectTimeout, s.opts.Dial)}
	}
	next := s.newGeneration(cfg, digest, router, client, cache)
	commit := func() {
		s.applyLimits(next)
		s.metrics.seed(cfg)
		s.cert.Store(cert)
		if cache != nil {
			s.pressure.Store(cache)
			s.metrics.watchPending(cache)
		}
	}
	return next, changes, commit, nil
}

// diffLines is config.Diff as the answer and GET /admin/v1/config carry it: one line a change, an
// empty list (never null) when nothing but the digest changed.
func diffLines(running, next config.Config) []string {
	changes := config.Diff(running, next)
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.String()
	}
	return out
}

// refused records and counts a refused reload, logs it once per distinct failure, and returns it
// wrapped in ErrReloadRefused.
func (s *Server) refused(err error) error {
	s.recordReload(manage.ReloadRefused, nil, err)
	if msg := err.Error(); msg != s.reloads.lastFail {
		s.reloads.lastFail = msg
		s.log.Warn("config reload refused; the running config keeps serving", "error", msg)
	}
	return fmt.Errorf("%w: %w", ErrReloadRefused, err)
}

func (s *Server) recordReload(result string, changes []string, err error) {
	now := s.now()
	if changes == nil {
		changes = []string{}
	}
	last := &manage.LastReload{Time: now.UTC(), Result: result, Changes: slices.Clone(changes)}
	if err != nil {
		last.Error = err.Error()
	} else {
		s.reloads.lastFail = ""
	}
	s.reloads.last = last
	s.metrics.reloaded(result, now)
}

func shortDigest(d string) string {
	if len(d) > 16 {
		return d[:16]
	}
	return d
}

// Config answers GET /admin/v1/config.
func (s *Server) Config() manage.ConfigStatus {
	s.reloads.mu.Lock() // a reload in progress finishes first: the answer never shows half of one
	defer s.reloads.mu.Unlock()
	g := s.current()
	st := manage.ConfigStatus{Digest: g.digest, Source: s.opts.ConfigPath, LoadedAt: g.loadedAt.UTC(), Generation: g.number,
		KeptTiers: s.keptTiers()}
	if l := s.reloads.last; l != nil {
		cp := *l
		cp.Changes = slices.Clone(l.Changes)
		st.LastReload = &cp
	}
	return st
}

// errReloadRefused is the fixed refusal of POST /admin/v1/config/reload; its message is replaced by
// the configuration error's text.
var errReloadRefused = apiError{http.StatusUnprocessableEntity, "the configuration was refused", "invalid_request_error", manage.ReloadRefusedCode}

// errReloadBody refuses a reload request with a body other than nothing or {}.
var errReloadBody = apiError{http.StatusBadRequest, "the reload request takes no fields: send {} or nothing", "invalid_request_error", "invalid_body"}

// reloadEndpoint is POST /admin/v1/config/reload: the same reload as SIGHUP.
func (s *Server) reloadEndpoint(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, manage.MaxBodyBytes))
	if err != nil || !emptyObject(body) {
		abort(c, errReloadBody)
		return
	}
	resp, err := s.ReloadFile(c.Request.Context())
	s.log.Info("config reload requested", "request_id", requestID(c), "result", resultOf(resp, err))
	if err != nil {
		e := errReloadRefused
		e.message = causeText(err)
		abort(c, e)
		return
	}
	c.JSON(http.StatusOK, resp)
}

// causeText is a refusal's text without the ErrReloadRefused prefix.
func causeText(err error) string {
	msg := err.Error()
	prefix := ErrReloadRefused.Error() + ": "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

func resultOf(resp manage.ReloadResponse, err error) string {
	if err != nil {
		return manage.ReloadRefused
	}
	return resp.Result
}

// emptyObject accepts an empty body or a JSON object with no members (whitespace allowed).
func emptyObject(b []byte) bool {
	var rest []byte
	for _, ch := range b {
		if ch != ' ' && ch != '\t' && ch != '\r' && ch != '\n' {
			rest = append(rest, ch)
		}
	}
	return len(rest) == 0 || string(rest) == "{}"
}

// configEndpoint is GET /admin/v1/config.
func (s *Server) configEndpoint(c *gin.Context) { c.JSON(http.StatusOK, s.Config()) }
