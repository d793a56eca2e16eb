package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/readiness"
	"github.com/anvil-llm/anvil/router/relay"
	"github.com/anvil-llm/anvil/router/routing"
)

// generation is everything a request reads from the configuration, built and validated completely
// before it is published and never changed after: the config, the walk (routing.Router, itself one
// generation over the state that outlives it), the relay's bounds, the views' plan and sources, and
// the tokens. The server holds the one in force in an atomic pointer; every request takes it once,
// on arrival (arrive), and keeps it to the end, unless its admission raced a reload (then it moves
// to the generation in force before it is admitted: see admit).
type generation struct {
	number  uint64
	cfg     config.Config
	digest  string // sha256 hex of the config file; "" when none
	router  *routing.Router
	relay   *relay.Relay
	client  *http.Client // the relay's: a new one only when upstream.connect_timeout changes
	plan    []capacity.TierSpec
	sources capacity.Sources
	callers []config.Secret
	// callerKeys and holders are each caller token's identity and budget holder, in callers' order.
	callerKeys []tokenKey
	holders    []*holder
	// labels are each caller's label in callers' order, bounded (callerLabels); observers are the
	// read-only tokens.
	labels    []string
	admin     []config.Secret
	observers []config.Secret
	ids       secretFilter // the credentials above and the tiers' upstream keys, which no caller ID may carry
	loadedAt  time.Time

	done chan struct{}              // closed when the next generation is in force
	next atomic.Pointer[generation] // set before done is closed
}

// newGeneration wraps a routing generation with the server's parts for cfg. cache is the pressure
// cache the generation will read when it is not the server's yet (a reload that creates it), else nil.
func (s *Server) newGeneration(cfg config.Config, digest string, router *routing.Router, client *http.Client, cache *scrape.Cache) *generation {
	up := cfg.Upstream()
	g := &generation{number: router.Generation(), cfg: cfg, digest: digest, router: router, client: client,
		relay: relay.New(client, relay.Options{MaxResponseBytes: up.MaxResponseBytes,
			FirstByteTimeout: up.FirstByteTimeout, Timeout: up.Timeout, Now: s.clock}),
		plan: capacity.Plan(cfg), callers: cfg.CallerTokens(), loadedAt: s.now(), done: make(chan struct{}),
		ids: newSecretFilter(generationSecrets(cfg), randomBase())}
	if t := cfg.AdminToken(); !t.IsZero() {
		g.admin = []config.Secret{t}
	}
	g.observers, g.labels = cfg.ObserverTokens(), callerLabels(cfg.Callers())
	g.callerKeys, g.holders = adoptHolders(s.gen.Load(), g.callers)
	g.sources = capacity.Sources{Admission: router.Admission(), Health: healthNow{router, s.now},
		Readiness: s.prober.State(), Decisions: s.decisions}
	if cache == nil {
		cache = s.pressure.Load()
	}
	if cache != nil { // a nil *Cache in the interface would not read as "no cache"
		g.sources.Pressure, g.sources.SampleAges = cache, cache
	}
	if s.view != nil {
		g.sources = s.view(g.sources)
	}
	return g
}

// applyLimits moves the body budget to g's limits. Bodies in flight keep what they took.
func (s *Server) applyLimits(g *generation) {
	l := g.cfg.Limits()
	s.bodies.setLimits(l.MaxInflightBodyBytes, callerShare(l.MaxInflightBodyBytes, l.CallerBodySharePercent, l.MaxBodyBytes, len(g.callers)))
	s.spills.setLimits(l.MaxSpillBytes, callerShare(l.MaxSpillBytes, l.CallerBodySharePercent, spillFloor(l.MaxAudioBytes), len(g.callers)))
	s.metrics.seedCallers(g.labelSet())
	s.metrics.usage.seed(g.cfg, g.labelSet())
}

// current is the generation in force.
func (s *Server) current() *generation { return s.gen.Load() }

const ctxGeneration = "anvil.generation"

// arrive is the first middleware: the request takes the generation in force, once.
func (s *Server) arrive(c *gin.Context) {
	c.Set(ctxGeneration, s.current())
	c.Next()
}

// genOf is the generation the request took on arrival.
func (s *Server) genOf(c *gin.Context) *generation {
	if v, ok := c.Get(ctxGeneration); ok {
		return v.(*generation)
	}
	return s.current()
}

// readinessFollower keeps the prober's targets on the generation in force: a member whose tier,
// ID, endpoint and served model stay keeps its verdict; a new one is unready until probed, and is
// probed at once.
type readinessFollower struct{ s *Server }

func (f readinessFollower) Stage(cfg config.Config) (func(), error) {
	ts, rd := targets(cfg), cfg.Readiness()
	return func() {
		fresh := f.s.prober.Retarget(ts, rd.Interval, rd.Timeout)
		f.s.probeSoon(fresh)
	}, nil
}

// pressureFollower keeps the pressure cache's capacity tiers on the generation in force (see
// scrape.Cache.Stage). Without a cache it stages nothing: a reload that adds the first capacity tier
// creates the cache with that tier's members (Reload).
type pressureFollower struct{ s *Server }

func (f pressureFollower) Stage(cfg config.Config) (func(), error) {
	c := f.s.pressure.Load()
	if c == nil {
		return func() {}, nil
	}
	commit, err := c.Stage(routing.PressureSpecs(cfg))
	if err != nil {
		return nil, fmt.Errorf("pressure cache: %w", err)
	}
	return commit, nil
}

// probeSoon probes members a reload added, in the background, so they admit as soon as their
// served-model readiness passes instead of at the next round.
func (s *Server) probeSoon(targets []readiness.Target) {
	if len(targets) == 0 || !s.probed.Load() {
		return // before the first round (startup), that round probes them
	}
	s.background.Go(func() {
		s.prober.ProbeTargets(s.workers, targets)
	})
}

// ErrTLS is wrapped by every failure to load the configured certificate and key: a missing or
// unreadable file, a file that is not regular, a pair that does not parse or match. At start it is
// invalid input (the command exits 2, before anything is served); on a reload the reload is refused.
var ErrTLS = errors.New("tls: cannot load the certificate and key")

// loadCertificate reads the configured TLS certificate and key (nil when TLS is off), each a regular
// file of at most 1 MiB.
func loadCertificate(t config.TLS) (*tls.Certificate, error) {
	if !t.Enabled() {
		return nil, nil
	}
	certPEM, err := readRegular(t.CertFile, maxCertFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTLS, err)
	}
	keyPEM, err := readRegular(t.KeyFile, maxCertFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTLS, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTLS, err)
	}
	return &cert, nil
}

// certificate serves the certificate in force: a reload re-reads the files, and new handshakes get
// the new pair.
func (s *Server) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.cert.Load(), nil
}
