package config

import "time"

// Document and the *Doc types mirror the YAML document one to one. They are the closed schema: the
// loader's gate (router/config/load) walks them by reflection to decide which keys exist and what YAML
// type each value must have, and viper decodes into them; the simulator builds one directly. Pointers
// mark optional settings so "absent" and "zero" differ; a nil struct and an empty mapping mean the same
// thing everywhere. Every field carries a mapstructure tag, which the gate reads too, and the same name as
// a yaml tag, so a Document marshals to the YAML the loader reads. A Document is only input: Build
// validates it into a Config.
type Document struct {
	Listen        *string         `mapstructure:"listen" yaml:"listen,omitempty"`
	TLS           *TLSDoc         `mapstructure:"tls" yaml:"tls,omitempty"`
	Auth          *AuthDoc        `mapstructure:"auth" yaml:"auth,omitempty"`
	Limits        *LimitsDoc      `mapstructure:"limits" yaml:"limits,omitempty"`
	Upstream      *UpstreamDoc    `mapstructure:"upstream" yaml:"upstream,omitempty"`
	ShutdownGrace *time.Duration  `mapstructure:"shutdown_grace" yaml:"shutdown_grace,omitempty"`
	Log           *LogDoc         `mapstructure:"log" yaml:"log,omitempty"`
	DecisionLog   *DecisionLogDoc `mapstructure:"decision_log" yaml:"decision_log,omitempty"`
	IntentFile    *string         `mapstructure:"intent_file" yaml:"intent_file,omitempty"`
	Readiness     *ReadinessDoc   `mapstructure:"readiness" yaml:"readiness,omitempty"`
	Metrics       *MetricsDoc     `mapstructure:"metrics" yaml:"metrics,omitempty"`
	Tracing       *TracingDoc     `mapstructure:"tracing" yaml:"tracing,omitempty"`
	Runtime       *RuntimeDoc     `mapstructure:"runtime" yaml:"runtime,omitempty"`
	Aliases       []AliasDoc      `mapstructure:"aliases" yaml:"aliases,omitempty"`
	Tiers         []TierDoc       `mapstructure:"tiers" yaml:"tiers,omitempty"`
}

// TLSDoc is the tls section of a Document.
type TLSDoc struct {
	CertFile *string `mapstructure:"cert_file" yaml:"cert_file,omitempty"`
	KeyFile  *string `mapstructure:"key_file" yaml:"key_file,omitempty"`
}

// AuthDoc is the auth section of a Document.
type AuthDoc struct {
	CallerTokensFile *string  `mapstructure:"caller_tokens_file" yaml:"caller_tokens_file,omitempty"`
	CallerTokens     []string `mapstructure:"caller_tokens" yaml:"caller_tokens,omitempty"`
	AdminTokenFile   *string  `mapstructure:"admin_token_file" yaml:"admin_token_file,omitempty"`
	AdminToken       *string  `mapstructure:"admin_token" yaml:"admin_token,omitempty"`
	// Roles (issue 27): read-only observer tokens, and caller tokens that carry a label.
	ObserverTokensFile *string     `mapstructure:"observer_tokens_file" yaml:"observer_tokens_file,omitempty"`
	ObserverTokens     []string    `mapstructure:"observer_tokens" yaml:"observer_tokens,omitempty"`
	Callers            []CallerDoc `mapstructure:"callers" yaml:"callers,omitempty"`
}

// CallerDoc is one labelled caller token of auth.callers: a label and exactly one source of the token.
type CallerDoc struct {
	Label     *string `mapstructure:"label" yaml:"label,omitempty"`
	TokenFile *string `mapstructure:"token_file" yaml:"token_file,omitempty"`
	TokenEnv  *string `mapstructure:"token_env" yaml:"token_env,omitempty"`
	Token     *string `mapstructure:"token" yaml:"token,omitempty"`
}

// LimitsDoc is the limits section of a Document.
type LimitsDoc struct {
	MaxBodyBytes         *int64 `mapstructure:"max_body_bytes" yaml:"max_body_bytes,omitempty"`
	MaxInflightBodyBytes *int64 `mapstructure:"max_inflight_body_bytes" yaml:"max_inflight_body_bytes,omitempty"`
	MaxAudioBytes        *int64 `mapstructure:"max_audio_bytes" yaml:"max_audio_bytes,omitempty"`
	MaxSpillBytes        *int64 `mapstructure:"max_spill_bytes" yaml:"max_spill_bytes,omitempty"`
	// The fair body budget (issue 26): a caller's share of the in-flight budget, and the minimum
	// upload rate after a grace.
	CallerBodySharePercent  *int64         `mapstructure:"caller_body_share_percent" yaml:"caller_body_share_percent,omitempty"`
	MinUploadBytesPerSecond *int64         `mapstructure:"min_upload_bytes_per_second" yaml:"min_upload_bytes_per_second,omitempty"`
	MinUploadGrace          *time.Duration `mapstructure:"min_upload_grace" yaml:"min_upload_grace,omitempty"`
}

// UpstreamDoc is the upstream section of a Document.
type UpstreamDoc struct {
	ConnectTimeout   *time.Duration `mapstructure:"connect_timeout" yaml:"connect_timeout,omitempty"`
	FirstByteTimeout *time.Duration `mapstructure:"first_byte_timeout" yaml:"first_byte_timeout,omitempty"`
	Timeout          *time.Duration `mapstructure:"timeout" yaml:"timeout,omitempty"`
	MaxResponseBytes *int64         `mapstructure:"max_response_bytes" yaml:"max_response_bytes,omitempty"`
}

// LogDoc is the log section of a Document.
type LogDoc struct {
	Format *string `mapstructure:"format" yaml:"format,omitempty"`
	Level  *string `mapstructure:"level" yaml:"level,omitempty"`
}

// DecisionLogDoc is the decision_log section of a Document.
type DecisionLogDoc struct {
	RingSize     *int64         `mapstructure:"ring_size" yaml:"ring_size,omitempty"`
	JSONLPath    *string        `mapstructure:"jsonl_path" yaml:"jsonl_path,omitempty"`
	MaxLineBytes *int64         `mapstructure:"max_line_bytes" yaml:"max_line_bytes,omitempty"`
	UnreadyAfter *time.Duration `mapstructure:"unready_after" yaml:"unready_after,omitempty"`
}

// ReadinessDoc is the readiness section of a Document.
type ReadinessDoc struct {
	Interval *time.Duration `mapstructure:"interval" yaml:"interval,omitempty"`
	Timeout  *time.Duration `mapstructure:"timeout" yaml:"timeout,omitempty"`
}

// MetricsDoc is the metrics section of a Document.
type MetricsDoc struct {
	Listen *string `mapstructure:"listen" yaml:"listen,omitempty"`
}

// RuntimeDoc is the runtime section of a Document: the garbage collector's settings (issue 31).
type RuntimeDoc struct {
	GCPercent          *int64 `mapstructure:"gc_percent" yaml:"gc_percent,omitempty"`
	MemoryLimitBytes   *int64 `mapstructure:"memory_limit_bytes" yaml:"memory_limit_bytes,omitempty"`
	MemoryLimitPercent *int64 `mapstructure:"memory_limit_percent" yaml:"memory_limit_percent,omitempty"`
}

// AliasDoc is one aliases entry of a Document.
type AliasDoc struct {
	ID   *string `mapstructure:"id" yaml:"id,omitempty"`
	Tier *string `mapstructure:"tier" yaml:"tier,omitempty"`
}

// TierDoc is one tiers entry of a Document.
type TierDoc struct {
	ID              *string           `mapstructure:"id" yaml:"id,omitempty"`
	Kind            *string           `mapstructure:"kind" yaml:"kind,omitempty"`
	ServedModel     *string           `mapstructure:"served_model" yaml:"served_model,omitempty"`
	Gates           *GatesDoc         `mapstructure:"gates" yaml:"gates,omitempty"`
	MaxConcurrency  *int64            `mapstructure:"max_concurrency" yaml:"max_concurrency,omitempty"`
	Endpoint        *string           `mapstructure:"endpoint" yaml:"endpoint,omitempty"`
	APIKeyEnv       *string           `mapstructure:"api_key_env" yaml:"api_key_env,omitempty"`
	Host            *string           `mapstructure:"host" yaml:"host,omitempty"`
	Provenance      *string           `mapstructure:"provenance" yaml:"provenance,omitempty"`
	ReplicaStrategy *string           `mapstructure:"replica_strategy" yaml:"replica_strategy,omitempty"`
	Engine          *string           `mapstructure:"engine" yaml:"engine,omitempty"`
	PassiveHealth   *PassiveHealthDoc `mapstructure:"passive_health" yaml:"passive_health,omitempty"`
	Queue           *QueueDoc         `mapstructure:"queue" yaml:"queue,omitempty"`
	Members         []MemberDoc       `mapstructure:"members" yaml:"members,omitempty"`
}

// QueueDoc is a tier's queue section of a Document.
type QueueDoc struct {
	MaxWaiting *int64         `mapstructure:"max_waiting" yaml:"max_waiting,omitempty"`
	Timeout    *time.Duration `mapstructure:"timeout" yaml:"timeout,omitempty"`
}

// PassiveHealthDoc is a replica tier's passive_health section of a Document.
type PassiveHealthDoc struct {
	Enabled             *bool          `mapstructure:"enabled" yaml:"enabled,omitempty"`
	ConsecutiveFailures *int64         `mapstructure:"consecutive_failures" yaml:"consecutive_failures,omitempty"`
	BaseEjection        *time.Duration `mapstructure:"base_ejection" yaml:"base_ejection,omitempty"`
	MaxEjection         *time.Duration `mapstructure:"max_ejection" yaml:"max_ejection,omitempty"`
	MaxEjectedPercent   *int64         `mapstructure:"max_ejected_percent" yaml:"max_ejected_percent,omitempty"`
	Count429            *bool          `mapstructure:"count_429" yaml:"count_429,omitempty"`
}

// GatesDoc is a tier's gates of a Document.
type GatesDoc struct {
	MaxContextTokens *int64 `mapstructure:"max_context_tokens" yaml:"max_context_tokens,omitempty"`
	MaxOutputTokens  *int64 `mapstructure:"max_output_tokens" yaml:"max_output_tokens,omitempty"`
	ToolsAllowed     *bool  `mapstructure:"tools_allowed" yaml:"tools_allowed,omitempty"`
	MediaAllowed     *bool  `mapstructure:"media_allowed" yaml:"media_allowed,omitempty"`
}

// MemberDoc is one replica tier's members entry of a Document.
type MemberDoc struct {
	ID             *string `mapstructure:"id" yaml:"id,omitempty"`
	Endpoint       *string `mapstructure:"endpoint" yaml:"endpoint,omitempty"`
	MaxConcurrency *int64  `mapstructure:"max_concurrency" yaml:"max_concurrency,omitempty"`
}
