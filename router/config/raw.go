package config

import "time"

// The raw* types mirror the YAML document one to one. They are the closed
// schema: the gate (gate.go) walks them by reflection to decide which keys
// exist and what YAML type each value must have, and viper decodes into
// them. Pointers mark optional settings so "absent" and "zero" differ; a
// nil struct and an empty mapping mean the same thing everywhere.
// Every field carries a mapstructure tag; the gate reads the same tag.

type rawConfig struct {
	Listen        *string         `mapstructure:"listen"`
	TLS           *rawTLS         `mapstructure:"tls"`
	Auth          *rawAuth        `mapstructure:"auth"`
	Limits        *rawLimits      `mapstructure:"limits"`
	Upstream      *rawUpstream    `mapstructure:"upstream"`
	ShutdownGrace *time.Duration  `mapstructure:"shutdown_grace"`
	Log           *rawLog         `mapstructure:"log"`
	DecisionLog   *rawDecisionLog `mapstructure:"decision_log"`
	IntentFile    *string         `mapstructure:"intent_file"`
	Readiness     *rawReadiness   `mapstructure:"readiness"`
	Aliases       []rawAlias      `mapstructure:"aliases"`
	Tiers         []rawTier       `mapstructure:"tiers"`
}

type rawTLS struct {
	CertFile *string `mapstructure:"cert_file"`
	KeyFile  *string `mapstructure:"key_file"`
}

type rawAuth struct {
	CallerTokensFile *string  `mapstructure:"caller_tokens_file"`
	CallerTokens     []string `mapstructure:"caller_tokens"`
	AdminTokenFile   *string  `mapstructure:"admin_token_file"`
	AdminToken       *string  `mapstructure:"admin_token"`
}

type rawLimits struct {
	MaxBodyBytes *int64 `mapstructure:"max_body_bytes"`
}

type rawUpstream struct {
	ConnectTimeout   *time.Duration `mapstructure:"connect_timeout"`
	FirstByteTimeout *time.Duration `mapstructure:"first_byte_timeout"`
	Timeout          *time.Duration `mapstructure:"timeout"`
	MaxResponseBytes *int64         `mapstructure:"max_response_bytes"`
}

type rawLog struct {
	Format *string `mapstructure:"format"`
	Level  *string `mapstructure:"level"`
}

type rawDecisionLog struct {
	RingSize     *int64  `mapstructure:"ring_size"`
	JSONLPath    *string `mapstructure:"jsonl_path"`
	MaxLineBytes *int64  `mapstructure:"max_line_bytes"`
}

type rawReadiness struct {
	Interval *time.Duration `mapstructure:"interval"`
	Timeout  *time.Duration `mapstructure:"timeout"`
}

type rawAlias struct {
	ID   *string `mapstructure:"id"`
	Tier *string `mapstructure:"tier"`
}

type rawTier struct {
	ID              *string     `mapstructure:"id"`
	Kind            *string     `mapstructure:"kind"`
	ServedModel     *string     `mapstructure:"served_model"`
	Gates           *rawGates   `mapstructure:"gates"`
	MaxConcurrency  *int64      `mapstructure:"max_concurrency"`
	Endpoint        *string     `mapstructure:"endpoint"`
	APIKeyEnv       *string     `mapstructure:"api_key_env"`
	Host            *string     `mapstructure:"host"`
	Provenance      *string     `mapstructure:"provenance"`
	ReplicaStrategy *string     `mapstructure:"replica_strategy"`
	Members         []rawMember `mapstructure:"members"`
}

type rawGates struct {
	MaxContextTokens *int64 `mapstructure:"max_context_tokens"`
	MaxOutputTokens  *int64 `mapstructure:"max_output_tokens"`
	ToolsAllowed     *bool  `mapstructure:"tools_allowed"`
	MediaAllowed     *bool  `mapstructure:"media_allowed"`
}

type rawMember struct {
	ID             *string `mapstructure:"id"`
	Endpoint       *string `mapstructure:"endpoint"`
	MaxConcurrency *int64  `mapstructure:"max_concurrency"`
}
