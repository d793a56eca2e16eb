package fakevllm

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/anvil-llm/anvil/engine"
)

// VLLMVersion is what GET /version reports: the vLLM release whose surface
// (metric names, framing) this fake follows.
const VLLMVersion = "0.12.0"

// IdentityHeader is set on every answer of a fake member, with the value
// IdentityValue; a real vLLM sends no such header. It is how a client that
// must keep synthetic evidence apart from real evidence (anvil-qualify)
// knows which one it observed, without trusting a declaration.
const (
	IdentityHeader = "X-Anvil-Fakevllm"
	IdentityValue  = "anvil-fakevllm/" + VLLMVersion
)

// Defaults and bounds of Options.
const (
	DefaultMaxBodyBytes   = 8 << 20
	DefaultNaturalStopMax = 256
	// DefaultMaxAudioBytes is vLLM's default bound of an uploaded audio file
	// (VLLM_MAX_AUDIO_CLIP_FILESIZE_MB=25, counted in MiB).
	DefaultMaxAudioBytes = 25 << 20
)

// ErrInvalidOptions is wrapped by every Options validation error.
var ErrInvalidOptions = errors.New("invalid fakevllm options")

// Options configures one member.
type Options struct {
	// Models are the served model names (vLLM --served-model-name) of the one
	// base model: /v1/models lists each as a base entry with the same root,
	// requests may name any of them, and the first one labels the metrics and
	// responses. At least one is required.
	Models []string
	// LoRA are LoRA adapter names, as vLLM's --lora-modules loads them:
	// /v1/models lists each after the base models with parent = Models[0]
	// and root = LoRARoot+name; requests may name one, and responses then
	// carry the adapter's name.
	LoRA []string
	// ExtraModels are unrelated base models listed after Models (root = the
	// name itself, no parent), as a server hosting a second model lists it.
	// Requests naming one are served by the same engine and report its name.
	ExtraModels []string
	// Profile is the engine model; the zero value means engine.DefaultProfile().
	Profile engine.Profile
	// Seed feeds the engine's jitter, the fault draws and the response IDs.
	Seed uint64
	// LegacyMetrics emits vllm:gpu_cache_usage_perc instead of
	// vllm:kv_cache_usage_perc; with another Engine, that engine's older
	// names (see internal/enginepage).
	LegacyMetrics bool
	// Engine is the serving engine the member shows itself as (one of
	// Engines(); "" is vLLM): its /metrics names and labels, its /v1/models
	// shape and its health path (engines.go).
	Engine string
	// Faults are applied at start (slow start counts from NewServer).
	Faults Faults
	// MaxBodyBytes bounds a JSON request body (default DefaultMaxBodyBytes).
	// An audio upload may be MaxAudioBytes + MaxBodyBytes long in total: the
	// file plus this much for the other form fields and the framing.
	MaxBodyBytes int64
	// MaxAudioBytes bounds the file of a transcription or translation
	// (default DefaultMaxAudioBytes).
	MaxAudioBytes int64
	// NaturalStopMax bounds the natural stop length of requests without
	// ignore_eos (default DefaultNaturalStopMax).
	NaturalStopMax int
	// Logger receives unexpected conditions only (nil: discarded).
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if err := validateModelNames(o); err != nil {
		return o, err
	}
	if err := validateEngine(o); err != nil {
		return o, err
	}
	o.Models = append([]string(nil), o.Models...)
	o.LoRA = append([]string(nil), o.LoRA...)
	o.ExtraModels = append([]string(nil), o.ExtraModels...)
	if o.Profile.Name == "" {
		o.Profile = engine.DefaultProfile()
	}
	if err := o.Profile.Validate(); err != nil {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.NaturalStopMax == 0 {
		o.NaturalStopMax = DefaultNaturalStopMax
	}
	if o.MaxAudioBytes == 0 {
		o.MaxAudioBytes = DefaultMaxAudioBytes
	}
	if o.MaxBodyBytes < 1 || o.NaturalStopMax < 1 || o.MaxAudioBytes < 1 {
		return o, fmt.Errorf("%w: MaxBodyBytes, MaxAudioBytes and NaturalStopMax must be positive", ErrInvalidOptions)
	}
	if o.MaxAudioBytes > maxAudioBytesLimit || o.MaxBodyBytes > maxAudioBytesLimit {
		return o, fmt.Errorf("%w: MaxBodyBytes and MaxAudioBytes must be at most %d", ErrInvalidOptions, int64(maxAudioBytesLimit))
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// Validate checks opts as NewServer would, without starting anything.
func (o Options) Validate() error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	f, err := o.Faults.Normalize()
	if err != nil {
		return err
	}
	_, err = kvReserve(o.Profile, f.KVBlocks)
	return err
}

// kvReserve converts the usable-blocks fault into reserved engine blocks.
func kvReserve(p engine.Profile, kvBlocks int) (int, error) {
	usable := p.NumGPUBlocks - 1
	if kvBlocks > usable {
		return 0, invalid("kv_blocks %d exceeds the profile's %d usable blocks", kvBlocks, usable)
	}
	if kvBlocks == 0 {
		return 0, nil
	}
	return usable - kvBlocks, nil
}

// Server is one fake vLLM member: an engine driven in real time behind a gin
// handler. Create it with NewServer and release it with Close.
type Server struct {
	opts    Options
	log     *slog.Logger
	lim     limits
	started time.Time
	drv     *driver
	faults  *faultState
	reg     *prometheus.Registry
	handler *gin.Engine
	ids     atomic.Uint64
	applyMu sync.Mutex // serializes SetFaults
	traces  traceLog   // traces.go

	closeOnce sync.Once
	closing   chan struct{} // closed by Close: releases hung /metrics handlers
}

// NewServer validates opts, starts the member's engine goroutine and applies
// opts.Faults. The caller serves Handler() and must call Close.
func NewServer(opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	faults, err := opts.Faults.Normalize()
	if err != nil {
		return nil, err
	}
	drv, err := newDriver(opts.Profile, deriveSeed(opts.Seed, 0))
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts: opts, log: opts.Logger, started: time.Now(), drv: drv,
		faults:  newFaultState(deriveSeed(opts.Seed, 1)),
		reg:     prometheus.NewRegistry(),
		closing: make(chan struct{}),
		lim: limits{
			maxModelLen: opts.Profile.ModelLen(), naturalCap: opts.NaturalStopMax,
			maxMessages: 4096, maxPromptIDs: opts.Profile.ModelLen(), maxTextFields: 16384,
		},
	}
	s.reg.MustRegister(newCollector(s.drv, opts.Models[0], opts.LegacyMetrics))
	if err := s.SetFaults(faults); err != nil {
		drv.close()
		return nil, err
	}
	s.handler = s.routes()
	return s, nil
}

// Handler is the member's HTTP surface: the OpenAI endpoints (text and
// audio), /v1/models,
// /health, /version, /metrics and /admin/faults.
func (s *Server) Handler() http.Handler { return s.handler }

// Models returns the served model names.
func (s *Server) Models() []string { return append([]string(nil), s.opts.Models...) }

// Close stops the engine goroutine: open requests fail (streams are cut) and
// hung /metrics handlers return. It is idempotent.
func (s *Server) Close() {
	s.beginClose()
	s.drv.close()
}

// beginClose refuses new generation requests and releases hung /metrics
// handlers, leaving streams in flight alone (graceful shutdown's first step).
func (s *Server) beginClose() { s.closeOnce.Do(func() { close(s.closing) }) }

// Faults returns the faults in force.
func (s *Server) Faults() Faults { return s.faults.get() }

// SetFaults validates and replaces every fault at once. Slow start counts
// from now; engine death, step-time multiplier and KV squeeze take effect in
// the engine immediately.
func (s *Server) SetFaults(f Faults) error {
	f, err := f.Normalize()
	if err != nil {
		return err
	}
	reserved, err := kvReserve(s.opts.Profile, f.KVBlocks)
	if err != nil {
		return err
	}
	scale := f.StepTimeMultiplier
	if scale == 0 {
		scale = 1
	}
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	if err := s.drv.configure(f.EngineDead, scale, reserved); err != nil {
		return err
	}
	s.faults.set(f, time.Now())
	return nil
}

// Metrics returns a snapshot of the member's engine metrics (for tests and
// demos; /metrics serves the same numbers).
func (s *Server) Metrics() engine.Metrics { return s.drv.metrics() }

func (s *Server) routes() *gin.Engine {
	// gin's debug mode prints every route to stdout, where anvil-fakevllm
	// announces its members; release mode is quiet. The mode is gin's
	// process-wide (atomic) setting; router/server sets it the same way.
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(identify, s.recoverer)
	v1 := r.Group("/v1", s.traces.record)
	v1.POST("/chat/completions", s.generate(endpointChat))
	v1.POST("/completions", s.generate(endpointCompletions))
	v1.POST("/responses", s.generate(endpointResponses))
	v1.POST("/audio/transcriptions", s.transcribe(endpointTranscription))
	v1.POST("/audio/translations", s.transcribe(endpointTranslation))
	v1.POST("/audio/speech", s.speech)
	if s.vllm() {
		r.GET("/v1/models", s.listModels)
	} else {
		r.GET("/v1/models", s.listEngineModels)
	}
	r.GET(s.healthPath(), s.health)
	r.GET("/version", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"version": VLLMVersion}) })
	r.GET("/metrics", s.serveMetrics)
	r.GET("/admin/faults", s.getFaults)
	r.GET("/admin/traces", s.getTraces)
	r.PUT("/admin/faults", s.putFaults)
	r.POST("/admin/faults", s.putFaults)
	// FastAPI's answers for unknown paths and methods, as vLLM gives them.
	r.NoRoute(func(c *gin.Context) { c.JSON(http.StatusNotFound, gin.H{"detail": "Not Found"}) })
	r.NoMethod(func(c *gin.Context) { c.JSON(http.StatusMethodNotAllowed, gin.H{"detail": "Method Not Allowed"}) })
	return r
}

// identify marks every answer, the unknown routes' included, as the fake's.
func identify(c *gin.Context) {
	c.Header(IdentityHeader, IdentityValue)
	c.Next()
}

// recoverer turns a handler panic into a 500 (or a cut connection once the
// response has started) and lets http.ErrAbortHandler through, which is how
// a stream fault cuts the connection. gin's own Recovery would swallow it
// and end the response cleanly.
func (s *Server) recoverer(c *gin.Context) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
			panic(v)
		}
		s.log.Error("fakevllm handler panic", "path", c.FullPath(), "panic", fmt.Sprint(v))
		if c.Writer.Written() {
			panic(http.ErrAbortHandler)
		}
		writeError(c.Writer, &apiError{Status: http.StatusInternalServerError, Message: "internal server error"})
		c.Abort()
	}()
	c.Next()
}

// ready is the readiness gate shared by /health, /v1/models and generation.
func (s *Server) ready() bool { return s.faults.ready(time.Now()) }

func (s *Server) health(c *gin.Context) {
	if !s.ready() || s.faults.dead() || s.isClosing() {
		c.Status(http.StatusServiceUnavailable)
		return
	}
	c.Status(http.StatusOK)
}

func (s *Server) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// newID returns a deterministic 32-hex-digit identifier, unique per member.
func (s *Server) newID() string {
	n := s.ids.Add(1)
	return fmt.Sprintf("%016x%016x", deriveSeed(s.opts.Seed, 1000+n), n)
}
