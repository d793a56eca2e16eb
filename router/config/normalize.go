package config

import (
	"bytes"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The norm* types are the output schema of Normalized: the input schema
// with every default filled in, endpoints and hosts canonical, and
// credentials replaced by Redacted. Field order follows the input schema.

type normConfig struct {
	Listen        string          `yaml:"listen"`
	TLS           *normTLS        `yaml:"tls,omitempty"`
	Auth          normAuth        `yaml:"auth"`
	Limits        normLimits      `yaml:"limits"`
	Upstream      normUpstream    `yaml:"upstream"`
	ShutdownGrace string          `yaml:"shutdown_grace"`
	Log           normLog         `yaml:"log"`
	DecisionLog   normDecisionLog `yaml:"decision_log"`
	IntentFile    string          `yaml:"intent_file,omitempty"`
	Readiness     normReadiness   `yaml:"readiness"`
	Metrics       *normMetrics    `yaml:"metrics,omitempty"`
	Tracing       *normTracing    `yaml:"tracing,omitempty"`
	Runtime       normRuntime     `yaml:"runtime"`
	Aliases       []normAlias     `yaml:"aliases"`
	Tiers         []normTier      `yaml:"tiers"`
}

type normTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

type normAuth struct {
	CallerTokens   []string     `yaml:"caller_tokens"`
	AdminToken     string       `yaml:"admin_token,omitempty"`
	ObserverTokens []string     `yaml:"observer_tokens,omitempty"`
	Callers        []normCaller `yaml:"callers,omitempty"`
}

// normCaller shows where a labelled caller's token comes from: the file or variable it names (neither
// is a secret, and both read the same token again), or the inline token redacted.
type normCaller struct {
	Label     string `yaml:"label"`
	TokenFile string `yaml:"token_file,omitempty"`
	TokenEnv  string `yaml:"token_env,omitempty"`
	Token     string `yaml:"token,omitempty"`
}

type normLimits struct {
	MaxBodyBytes         int64  `yaml:"max_body_bytes"`
	MaxInflightBodyBytes int64  `yaml:"max_inflight_body_bytes"`
	MaxAudioBytes        int64  `yaml:"max_audio_bytes"`
	MaxSpillBytes        int64  `yaml:"max_spill_bytes"`
	CallerBodyShare      int64  `yaml:"caller_body_share_percent"`
	MinUploadRate        int64  `yaml:"min_upload_bytes_per_second"`
	MinUploadGrace       string `yaml:"min_upload_grace"`
}

type normUpstream struct {
	ConnectTimeout   string `yaml:"connect_timeout"`
	FirstByteTimeout string `yaml:"first_byte_timeout"`
	Timeout          string `yaml:"timeout"`
	MaxResponseBytes int64  `yaml:"max_response_bytes"`
}

// normTracing is shown only when tracing is on; its resource attributes in OTEL_RESOURCE_ATTRIBUTES'
// form.
type normTracing struct {
	Endpoint           string  `yaml:"endpoint"`
	Protocol           string  `yaml:"protocol"`
	ServiceName        string  `yaml:"service_name"`
	Sampler            string  `yaml:"sampler"`
	SamplerArg         float64 `yaml:"sampler_arg"`
	ResourceAttributes string  `yaml:"resource_attributes,omitempty"`
}

type normLog struct {
	Format string `yaml:"format"`
	Level  string `yaml:"level"`
}

type normDecisionLog struct {
	RingSize     int    `yaml:"ring_size"`
	JSONLPath    string `yaml:"jsonl_path,omitempty"`
	MaxLineBytes int    `yaml:"max_line_bytes"`
	UnreadyAfter string `yaml:"unready_after"`
}

type normReadiness struct {
	Interval string `yaml:"interval"`
	Timeout  string `yaml:"timeout"`
}

type normMetrics struct {
	Listen string `yaml:"listen"`
}

type normRuntime struct {
	GCPercent          int   `yaml:"gc_percent,omitempty"`
	MemoryLimitBytes   int64 `yaml:"memory_limit_bytes,omitempty"`
	MemoryLimitPercent int   `yaml:"memory_limit_percent"`
}

type normAlias struct {
	ID   string `yaml:"id"`
	Tier string `yaml:"tier"`
}

type normTier struct {
	ID              string             `yaml:"id"`
	Kind            string             `yaml:"kind"`
	ServedModel     string             `yaml:"served_model"`
	Gates           normGates          `yaml:"gates"`
	MaxConcurrency  int64              `yaml:"max_concurrency,omitempty"`
	Endpoint        string             `yaml:"endpoint,omitempty"`
	APIKeyEnv       string             `yaml:"api_key_env,omitempty"`
	Host            string             `yaml:"host,omitempty"`
	Provenance      string             `yaml:"provenance,omitempty"`
	ReplicaStrategy string             `yaml:"replica_strategy,omitempty"`
	Engine          string             `yaml:"engine,omitempty"`
	PassiveHealth   *normPassiveHealth `yaml:"passive_health,omitempty"`
	Queue           *normQueue         `yaml:"queue,omitempty"`
	Members         []normMember       `yaml:"members,omitempty"`
}

type normQueue struct {
	MaxWaiting int    `yaml:"max_waiting"`
	Timeout    string `yaml:"timeout"`
}

type normPassiveHealth struct {
	Enabled             bool   `yaml:"enabled"`
	ConsecutiveFailures int    `yaml:"consecutive_failures"`
	BaseEjection        string `yaml:"base_ejection"`
	MaxEjection         string `yaml:"max_ejection"`
	MaxEjectedPercent   int    `yaml:"max_ejected_percent"`
	Count429            bool   `yaml:"count_429"`
}

type normGates struct {
	MaxContextTokens int64 `yaml:"max_context_tokens"`
	MaxOutputTokens  int64 `yaml:"max_output_tokens"`
	ToolsAllowed     bool  `yaml:"tools_allowed"`
	MediaAllowed     bool  `yaml:"media_allowed"`
}

type normMember struct {
	ID             string `yaml:"id"`
	Endpoint       string `yaml:"endpoint"`
	MaxConcurrency int64  `yaml:"max_concurrency,omitempty"`
}

// Normalized renders the effective configuration as YAML for
// `anvil-router config check`: defaults filled in, endpoints canonical,
// every credential replaced by Redacted (the number of caller tokens and
// where they came from stay visible as comments). The output uses the
// input schema, so it parses again when the credentials are supplied by
// the environment, and parsing it again yields the same output.
func (c Config) Normalized() ([]byte, error) {
	var root yaml.Node
	if err := root.Encode(c.norm()); err != nil {
		return nil, err
	}
	root.HeadComment = "normalized anvil-router configuration: defaults filled in, credentials redacted"
	c.annotateAuth(&root)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (c Config) norm() normConfig {
	n := normConfig{
		Listen: c.listen,
		Auth:   normAuth{CallerTokens: make([]string, len(c.auth.callerTokens))},
		Limits: normLimits{MaxBodyBytes: c.limits.MaxBodyBytes, MaxInflightBodyBytes: c.limits.MaxInflightBodyBytes,
			MaxAudioBytes: c.limits.MaxAudioBytes, MaxSpillBytes: c.limits.MaxSpillBytes, CallerBodyShare: c.limits.CallerBodySharePercent,
			MinUploadRate: c.limits.MinUploadBytesPerSecond, MinUploadGrace: fmtDuration(c.limits.MinUploadGrace)},
		ShutdownGrace: fmtDuration(c.shutdownGrace),
		Log:           normLog(c.log),
		DecisionLog: normDecisionLog{RingSize: c.decisionLog.RingSize, JSONLPath: c.decisionLog.JSONLPath,
			MaxLineBytes: c.decisionLog.MaxLineBytes, UnreadyAfter: fmtDuration(c.decisionLog.UnreadyAfter)},
		IntentFile: c.intentFile,
		Readiness: normReadiness{
			Interval: fmtDuration(c.readiness.Interval),
			Timeout:  fmtDuration(c.readiness.Timeout),
		},
		Upstream: normUpstream{
			ConnectTimeout:   fmtDuration(c.upstream.ConnectTimeout),
			FirstByteTimeout: fmtDuration(c.upstream.FirstByteTimeout),
			Timeout:          fmtDuration(c.upstream.Timeout),
			MaxResponseBytes: c.upstream.MaxResponseBytes,
		},
		Aliases: make([]normAlias, len(c.aliases)),
		Tiers:   make([]normTier, len(c.tiers)),
	}
	if c.tls.Enabled() {
		n.TLS = &normTLS{CertFile: c.tls.CertFile, KeyFile: c.tls.KeyFile}
	}
	if c.metrics.Listen != "" {
		n.Metrics = &normMetrics{Listen: c.metrics.Listen}
	}
	if t := c.tracing; t.Enabled() {
		n.Tracing = &normTracing{Endpoint: t.Endpoint, Protocol: t.Protocol, ServiceName: t.ServiceName,
			Sampler: t.Sampler, SamplerArg: t.SamplerArg, ResourceAttributes: formatAttributes(t.ResourceAttributes)}
	}
	n.Runtime = normRuntime{GCPercent: c.runtime.GCPercent, MemoryLimitBytes: c.runtime.MemoryLimitBytes,
		MemoryLimitPercent: c.runtime.MemoryLimitPercent}
	for i, t := range c.auth.callerTokens {
		n.Auth.CallerTokens[i] = t.redacted()
	}
	n.Auth.AdminToken = c.auth.adminToken.redacted()
	for _, t := range c.auth.observerTokens {
		n.Auth.ObserverTokens = append(n.Auth.ObserverTokens, t.redacted())
	}
	for _, l := range c.auth.callers {
		nc := normCaller{Label: l.label}
		switch kind, where, _ := strings.Cut(l.source, " "); kind {
		case "file":
			nc.TokenFile = where
		case "environment":
			nc.TokenEnv = where
		default:
			nc.Token = l.token.redacted()
		}
		n.Auth.Callers = append(n.Auth.Callers, nc)
	}
	for i, a := range c.aliases {
		n.Aliases[i] = normAlias(a)
	}
	for i, t := range c.tiers {
		n.Tiers[i] = normTierOf(t)
	}
	return n
}

func normTierOf(t Tier) normTier {
	nt := normTier{
		ID:              t.ID,
		Kind:            string(t.Kind),
		ServedModel:     t.ServedModel,
		Gates:           normGates(t.Gates),
		MaxConcurrency:  t.MaxConcurrency,
		Endpoint:        t.Endpoint,
		APIKeyEnv:       t.APIKeyEnv,
		Host:            t.Host,
		Provenance:      t.Provenance,
		ReplicaStrategy: string(t.Strategy),
		Engine:          t.Engine,
	}
	if q := t.Queue; q.MaxWaiting > 0 {
		nt.Queue = &normQueue{MaxWaiting: q.MaxWaiting, Timeout: fmtDuration(q.Timeout)}
	}
	if t.Kind == KindReplica {
		ph := t.PassiveHealth
		nt.PassiveHealth = &normPassiveHealth{Enabled: ph.Enabled, ConsecutiveFailures: ph.ConsecutiveFailures,
			BaseEjection: fmtDuration(ph.BaseEjection), MaxEjection: fmtDuration(ph.MaxEjection),
			MaxEjectedPercent: ph.MaxEjectedPercent, Count429: ph.Count429}
	}
	for _, m := range t.Members {
		nt.Members = append(nt.Members, normMember(m))
	}
	return nt
}

// annotateAuth adds "from ..." comments to the redacted credentials so an
// operator can see which source won without seeing the secret.
func (c Config) annotateAuth(root *yaml.Node) {
	auth := mappingValue(root, "auth")
	if auth == nil {
		return
	}
	if k := mappingKey(auth, "caller_tokens"); k != nil && c.auth.callerSource != "" {
		k.LineComment = "from " + c.auth.callerSource
	}
	if k := mappingKey(auth, "admin_token"); k != nil && c.auth.adminSource != "" {
		k.LineComment = "from " + c.auth.adminSource
	}
	if k := mappingKey(auth, "observer_tokens"); k != nil && c.auth.observerSource != "" {
		k.LineComment = "from " + c.auth.observerSource
	}
}

func mappingKey(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// formatAttributes writes resource attributes back in OTEL_RESOURCE_ATTRIBUTES' form, values
// percent-encoded, so ParseResourceAttributes reads the same pairs again.
func formatAttributes(attrs []Attribute) string {
	parts := make([]string, len(attrs))
	for i, a := range attrs {
		parts[i] = a.Key + "=" + url.PathEscape(a.Value)
	}
	return strings.Join(parts, ",")
}
