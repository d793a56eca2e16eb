package config

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Kind is a tier's routing kind.
type Kind string

// The two tier kinds.
const (
	KindDirect  Kind = "direct"
	KindReplica Kind = "replica"
)

// Strategy is how a replica tier picks one member. Direct tiers have none ("").
type Strategy string

// The two replica strategies; round robin is the default.
const (
	StrategyRoundRobin Strategy = "round_robin"
	StrategyCapacity   Strategy = "capacity"
)

// Config is one validated router configuration. It is immutable: its fields
// are unexported, every accessor returns a copy, and nothing inside is ever
// written after Parse returns, so a Config may be shared across goroutines
// and copied freely. The zero Config is empty, not valid; obtain one from
// Load or Parse. Printing a Config (fmt, slog) shows a redacted summary.
type Config struct {
	listen        string
	tls           TLS
	auth          authConfig
	limits        Limits
	upstream      Upstream
	shutdownGrace time.Duration
	log           Log
	decisionLog   DecisionLog
	intentFile    string
	readiness     Readiness
	metrics       Metrics
	tracing       Tracing
	runtime       Runtime
	aliases       []Alias
	tiers         []Tier
	tierIndex     map[string]int // tier ID -> index in tiers
	aliasIndex    map[string]int // alias ID -> index in tiers
}

// authConfig keeps the resolved credentials and, for Normalized, where
// they came from (never the values).
type authConfig struct {
	callerTokens   []Secret // the unlabelled ones: caller_tokens, caller_tokens_file or the environment
	callerSource   string
	callers        []labelledCaller // auth.callers, after callerTokens in every list of callers
	observerTokens []Secret
	observerSource string
	adminToken     Secret
	adminSource    string
}

// TLS is the optional serving certificate. Zero means plain HTTP.
type TLS struct {
	CertFile string
	KeyFile  string
}

// Enabled reports whether TLS is configured.
func (t TLS) Enabled() bool { return t.CertFile != "" }

// Limits bounds what a caller may send.
type Limits struct {
	MaxBodyBytes int64
	// MaxInflightBodyBytes bounds the request bodies being read and parsed at once, counted by their
	// declared length (MaxBodyBytes when unknown); a request that does not fit is refused with 503.
	MaxInflightBodyBytes int64
	// MaxAudioBytes bounds a whole multipart audio upload (file, other fields and framing together),
	// which streams through instead of being held.
	MaxAudioBytes int64
	// MaxSpillBytes bounds the disk all held audio files use together: a file part sent before the
	// model field is held until the model is known, in memory up to a bound and past it in a
	// temporary file. 0 turns spilling off (a held file past the memory bound is refused with 413);
	// otherwise at least 1 MiB, one spill step.
	MaxSpillBytes int64
	// CallerBodySharePercent is the part of MaxInflightBodyBytes one caller token may hold at once
	// (never less than one largest body); 0 turns the share off. With one caller token there is
	// nobody to share with, and the share does not apply.
	CallerBodySharePercent int64
	// MinUploadBytesPerSecond is the slowest a request body (ordinary or audio) may arrive, on
	// average, once MinUploadGrace has passed; a slower one is cut with 408. 0 turns the rule off.
	MinUploadBytesPerSecond int64
	MinUploadGrace          time.Duration
}

// Upstream bounds every relayed attempt.
type Upstream struct {
	ConnectTimeout   time.Duration
	FirstByteTimeout time.Duration
	Timeout          time.Duration
	MaxResponseBytes int64
}

// Log selects the slog handler.
type Log struct {
	Format string // "text" or "json"
	Level  string // "debug", "info", "warn" or "error"
}

// SlogLevel converts Level for slog.HandlerOptions.
func (l Log) SlogLevel() slog.Level {
	switch l.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// DecisionLog sizes the in-memory ring and the optional JSONL sink.
type DecisionLog struct {
	RingSize     int
	JSONLPath    string // "" = no sink
	MaxLineBytes int
	// UnreadyAfter makes /readyz answer 503 once the JSONL sink's writes have failed for longer than
	// this; 0 = never.
	UnreadyAfter time.Duration
}

// Readiness paces the member readiness prober.
type Readiness struct {
	Interval time.Duration
	Timeout  time.Duration
}

// Metrics says where /metrics is served besides the main listener.
type Metrics struct {
	// Listen is a second address (host:port) serving GET /metrics alone, without a token, for a
	// private interface; "" serves /metrics only on the main listener, behind the admin token.
	Listen string
}

// Runtime is the garbage collector's settings, applied once at start-up (internal/gctune decides
// with the environment, which wins, and the container's memory limit).
type Runtime struct {
	GCPercent          int   // the GC percentage (GOGC); 0: internal/gctune's default
	MemoryLimitBytes   int64 // the soft memory limit (GOMEMLIMIT); 0: derived from the container's limit
	MemoryLimitPercent int   // the share of the container's memory limit taken as the soft limit
}

// Alias maps one caller-visible model name to one tier.
type Alias struct {
	ID   string
	Tier string
}

// Gates are a tier's request-wide capability limits.
type Gates struct {
	MaxContextTokens int64
	MaxOutputTokens  int64
	ToolsAllowed     bool
	MediaAllowed     bool
}

// Tier is one logical upstream: a direct endpoint or a replica set. Values
// returned by Config are deep copies; changing them changes nothing else.
type Tier struct {
	ID          string
	Kind        Kind
	ServedModel string // exact model name the upstream reports in /v1/models
	Gates       Gates
	// MaxConcurrency is the configured aggregate ceiling, 0 when absent.
	// Use EffectiveMaxConcurrency for the ceiling admission enforces.
	MaxConcurrency int64
	Endpoint       string // direct only: normalized base URL, no trailing slash
	APIKeyEnv      string // name of the variable the key came from, "" = none
	APIKey         Secret // sent upstream as a bearer token when set
	Host           string // replica only: canonical declared host
	Provenance     string // replica only: declared replica provenance
	Strategy       Strategy
	// Engine is the serving engine of a replica tier's members (one adapter name of
	// router/pressure/adapter, "vllm" by default; "" on direct tiers). It selects how their
	// /metrics page is read and the shape of their identity probes (trtllm: Triton's model list
	// and /health/ready, server.readinessRule), never a ceiling.
	Engine        string
	PassiveHealth PassiveHealth // replica only
	Queue         Queue         // the admission queue; MaxWaiting 0 = none
	Members       []Member      // replica only, in file order
}

// Queue is a tier's admission queue: a request that finds no capacity waits, holding no reservation,
// in a FIFO of at most MaxWaiting requests for at most Timeout. The zero Queue is no queue: such a
// request is refused at once (503 with Retry-After).
type Queue struct {
	MaxWaiting int
	Timeout    time.Duration
}

// PassiveHealth is a replica tier's passive-health policy (router/health): consecutive upstream
// failures eject a member from eligibility for a while. Enabled by default on replica tiers.
type PassiveHealth struct {
	Enabled             bool
	ConsecutiveFailures int           // failures in a row that eject
	BaseEjection        time.Duration // the first ejection's length; the n-th consecutive one lasts n times this
	MaxEjection         time.Duration // the longest ejection, and how long a member must stay healthy to be forgiven
	MaxEjectedPercent   int           // share of members ejected at once, 0-100; one member always stays
	Count429            bool          // a 429 answer counts as a failure (by default it is the member working)
}

// Member is one replica of a replica tier.
type Member struct {
	ID       string
	Endpoint string // normalized base URL on the tier's host
	// MaxConcurrency is the member ceiling, 0 when absent (round robin only).
	MaxConcurrency int64
}

// EffectiveMaxConcurrency is the aggregate ceiling admission enforces, 0
// meaning no tier-level ceiling. In capacity mode an absent tier value is
// the sum of the member ceilings (never the member count times anything);
// otherwise it is the configured value.
func (t Tier) EffectiveMaxConcurrency() int64 {
	if t.MaxConcurrency != 0 || t.Strategy != StrategyCapacity {
		return t.MaxConcurrency
	}
	var sum int64
	for _, m := range t.Members {
		sum += m.MaxConcurrency
	}
	return sum
}

// Member returns the member with the given ID.
func (t Tier) Member(id string) (Member, bool) {
	for _, m := range t.Members {
		if m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}

func (t Tier) clone() Tier {
	if t.Members != nil {
		t.Members = append([]Member(nil), t.Members...)
	}
	return t
}

// Listen is the address to serve on (host:port; port 0 picks a free port).
func (c Config) Listen() string { return c.listen }

// WithListen returns a copy listening on addr instead, for a command-line
// override (`serve --listen`), which takes precedence over ANVIL_LISTEN and
// the file. addr follows the rules of the listen key.
func (c Config) WithListen(addr string) (Config, error) {
	if !validListen(addr) {
		return Config{}, invalid("listen", "must be host:port with a port 0-65535")
	}
	c.listen = addr
	return c, nil
}

// TLS is the serving certificate; TLS().Enabled() is false for plain HTTP.
func (c Config) TLS() TLS { return c.tls }

// CallerTokens are the accepted caller bearer tokens (a fresh copy): the unlabelled ones, then
// auth.callers' in their order; Callers lists the same tokens with their labels.
func (c Config) CallerTokens() []Secret {
	out := append([]Secret(nil), c.auth.callerTokens...)
	for _, l := range c.auth.callers {
		out = append(out, l.token)
	}
	return out
}

// Callers are the caller tokens in CallerTokens' order, each with its label ("" when unlabelled).
func (c Config) Callers() []Caller {
	out := make([]Caller, 0, len(c.auth.callerTokens)+len(c.auth.callers))
	for _, t := range c.auth.callerTokens {
		out = append(out, Caller{Token: t})
	}
	for _, l := range c.auth.callers {
		out = append(out, Caller{Label: l.label, Token: l.token})
	}
	return out
}

// ObserverTokens are the read-only tokens (a fresh copy); none when the role is unused.
func (c Config) ObserverTokens() []Secret { return append([]Secret(nil), c.auth.observerTokens...) }

// AdminToken is the admin bearer token; zero when the admin API is disabled.
func (c Config) AdminToken() Secret { return c.auth.adminToken }

// Limits bounds caller requests.
func (c Config) Limits() Limits { return c.limits }

// Upstream bounds relayed attempts.
func (c Config) Upstream() Upstream { return c.upstream }

// ShutdownGrace is how long in-flight requests may run after a stop signal.
func (c Config) ShutdownGrace() time.Duration { return c.shutdownGrace }

// Log selects the log format and level.
func (c Config) Log() Log { return c.log }

// DecisionLog sizes the decision log.
func (c Config) DecisionLog() DecisionLog { return c.decisionLog }

// IntentFile is where quiesce intent persists; "" keeps it in memory only.
func (c Config) IntentFile() string { return c.intentFile }

// Readiness paces member readiness probes.
func (c Config) Readiness() Readiness { return c.readiness }

// Metrics says where /metrics is served besides the main listener.
func (c Config) Metrics() Metrics { return c.metrics }

// Runtime is the garbage collector's settings.
func (c Config) Runtime() Runtime { return c.runtime }

// Aliases lists every alias in file order (a fresh copy).
func (c Config) Aliases() []Alias { return append([]Alias(nil), c.aliases...) }

// Tiers lists every tier in file order (deep copies).
func (c Config) Tiers() []Tier {
	out := make([]Tier, len(c.tiers))
	for i, t := range c.tiers {
		out[i] = t.clone()
	}
	return out
}

// Tier returns the tier with the given ID.
func (c Config) Tier(id string) (Tier, bool) {
	i, ok := c.tierIndex[id]
	if !ok {
		return Tier{}, false
	}
	return c.tiers[i].clone(), true
}

// Alias resolves an alias (exact match) to its tier.
func (c Config) Alias(name string) (Tier, bool) {
	i, ok := c.aliasIndex[name]
	if !ok {
		return Tier{}, false
	}
	return c.tiers[i].clone(), true
}

// String is a one-line summary without secrets.
func (c Config) String() string {
	return fmt.Sprintf("config{listen=%s tls=%t tiers=%d aliases=%d caller_tokens=%d observer_tokens=%d admin_token=%t}",
		c.listen, c.tls.Enabled(), len(c.tiers), len(c.aliases), len(c.auth.callerTokens)+len(c.auth.callers),
		len(c.auth.observerTokens), !c.auth.adminToken.IsZero())
}

// GoString keeps %#v from dumping unexported fields (and their secrets).
func (c Config) GoString() string { return "config.Config" + strings.TrimPrefix(c.String(), "config") }

// Format routes every fmt verb through String: without it, %d or %x on a
// Config would print its unexported fields, tokens included.
func (c Config) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(c.GoString()))
		return
	}
	_, _ = f.Write([]byte(c.String()))
}

// LogValue keeps slog output to the same redacted summary.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("listen", c.listen),
		slog.Bool("tls", c.tls.Enabled()),
		slog.Int("tiers", len(c.tiers)),
		slog.Int("aliases", len(c.aliases)),
	)
}
