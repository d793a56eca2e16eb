package config

import (
	"net/url"
	"strconv"
	"strings"
)

// TracingDoc is the tracing section of a Document: the OpenTelemetry exporter, said in YAML. Each key
// has its standard OTEL_ variable, and the variable wins, as ANVIL_API_TOKENS wins over the token
// settings.
type TracingDoc struct {
	Endpoint           *string  `mapstructure:"endpoint" yaml:"endpoint,omitempty"`
	Protocol           *string  `mapstructure:"protocol" yaml:"protocol,omitempty"`
	ServiceName        *string  `mapstructure:"service_name" yaml:"service_name,omitempty"`
	Sampler            *string  `mapstructure:"sampler" yaml:"sampler,omitempty"`
	SamplerArg         *float64 `mapstructure:"sampler_arg" yaml:"sampler_arg,omitempty"`
	ResourceAttributes *string  `mapstructure:"resource_attributes" yaml:"resource_attributes,omitempty"`
}

// The OpenTelemetry SDK's standard variables, read by Build through its lookup. An empty value counts
// as unset. OTEL_SDK_DISABLED=true turns tracing off whatever the rest says.
const (
	EnvOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"        // overrides tracing.endpoint
	EnvOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" // overrides both, a traces URL used as-is
	EnvOTLPProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"        // overrides tracing.protocol
	EnvOTLPTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" // overrides both
	EnvServiceName        = "OTEL_SERVICE_NAME"                  // overrides tracing.service_name
	EnvTracesSampler      = "OTEL_TRACES_SAMPLER"                // overrides tracing.sampler
	EnvTracesSamplerArg   = "OTEL_TRACES_SAMPLER_ARG"            // overrides tracing.sampler_arg
	EnvResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"           // overrides tracing.resource_attributes
	EnvSDKDisabled        = "OTEL_SDK_DISABLED"
)

// The tracing protocols and samplers, spelled as the OpenTelemetry specification spells them.
const (
	ProtocolHTTP     = "http/protobuf"
	ProtocolHTTPJSON = "http/json"
	ProtocolGRPC     = "grpc"

	DefaultServiceName = "anvil-router"
	DefaultSampler     = "parentbased_always_on"
)

// maxResourceAttributes bounds tracing.resource_attributes: a resource is a few labels, not a payload.
const maxResourceAttributes, maxResourceAttributesBytes = 64, 4096

// Tracing is the validated tracing section. Tracing is on exactly when Endpoint is set.
type Tracing struct {
	Endpoint string // an http or https URL without credentials; "" is tracing off
	// TracesURL says Endpoint came from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the traces URL itself,
	// used as-is, where the others are a base URL the traces path is appended to (over HTTP).
	TracesURL   bool
	Protocol    string // ProtocolHTTP, ProtocolHTTPJSON or ProtocolGRPC
	ServiceName string
	Sampler     string  // one of Samplers()
	SamplerArg  float64 // 0-1: the ratio of the traceidratio samplers
	// ResourceAttributes are the key=value pairs of resource_attributes, in their order, decoded.
	ResourceAttributes []Attribute
}

// Attribute is one resource attribute.
type Attribute struct{ Key, Value string }

// Enabled reports whether spans are exported.
func (t Tracing) Enabled() bool { return t.Endpoint != "" }

// Samplers lists the sampler names tracing.sampler accepts (OTEL_TRACES_SAMPLER's, less the ones
// that need a vendor's remote configuration).
func Samplers() []string {
	return []string{"always_on", "always_off", "traceidratio", "parentbased_always_on",
		"parentbased_always_off", "parentbased_traceidratio"}
}

// Tracing is the tracing section; its zero value (tracing off) when none is configured.
func (c Config) Tracing() Tracing {
	t := c.tracing
	t.ResourceAttributes = append([]Attribute(nil), t.ResourceAttributes...)
	return t
}

// tracingValue is a setting's value and the path an error names: the variable when it set the value.
func tracingValue(p *string, env string, lookup func(string) (string, bool), key string) (string, string, bool) {
	if v, ok := lookup(env); ok && v != "" {
		return v, env, true
	}
	if p != nil {
		return *p, "tracing." + key, true
	}
	return "", "tracing." + key, false
}

func buildTracing(r *TracingDoc, lookup func(string) (string, bool), c *Config) error {
	if r == nil {
		r = &TracingDoc{}
	}
	if v, ok := lookup(EnvSDKDisabled); ok && strings.EqualFold(strings.TrimSpace(v), "true") {
		return nil
	}
	endpoint, path, ok := tracingValue(r.Endpoint, EnvOTLPEndpoint, lookup, "endpoint")
	tracesURL := false
	if v, ok2 := lookup(EnvOTLPTracesEndpoint); ok2 && v != "" {
		endpoint, path, ok, tracesURL = v, EnvOTLPTracesEndpoint, true, true
	}
	if !ok {
		return nil // off: nothing else is read
	}
	if !validCollectorURL(endpoint) {
		return invalid(path, "must be an http or https URL with a host and no credentials")
	}
	t := Tracing{Endpoint: endpoint, TracesURL: tracesURL, Protocol: ProtocolHTTP, Sampler: DefaultSampler, SamplerArg: 1}
	if err := buildProtocol(r, lookup, &t); err != nil {
		return err
	}
	if v, path, ok := tracingValue(r.ServiceName, EnvServiceName, lookup, "service_name"); ok {
		if !validLabel(v) {
			return invalid(path, "must be 1-255 visible characters")
		}
		t.ServiceName = v
	}
	if err := buildSampler(r, lookup, &t); err != nil {
		return err
	}
	v, path, _ := tracingValue(r.ResourceAttributes, EnvResourceAttributes, lookup, "resource_attributes")
	attrs, err := ParseResourceAttributes(v)
	if err != nil {
		return invalid(path, "must be key=value pairs separated by commas, at most 64, 4096 bytes in all")
	}
	t.ResourceAttributes = attrs
	t.ServiceName = serviceName(t.ServiceName, attrs)
	c.tracing = t
	return nil
}

// serviceName is service.name in the specification's order: OTEL_SERVICE_NAME (or service_name),
// then service.name among the resource attributes (the last one), then DefaultServiceName.
func serviceName(set string, attrs []Attribute) string {
	if set != "" {
		return set
	}
	name := DefaultServiceName
	for _, a := range attrs {
		if a.Key == "service.name" && a.Value != "" {
			name = a.Value
		}
	}
	return name
}

// buildProtocol reads the protocol: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, then
// OTEL_EXPORTER_OTLP_PROTOCOL, then tracing.protocol.
func buildProtocol(r *TracingDoc, lookup func(string) (string, bool), t *Tracing) error {
	v, path, ok := tracingValue(r.Protocol, EnvOTLPProtocol, lookup, "protocol")
	if tv, tok := lookup(EnvOTLPTracesProtocol); tok && tv != "" {
		v, path, ok = tv, EnvOTLPTracesProtocol, true
	}
	if !ok {
		return nil
	}
	if v != ProtocolHTTP && v != ProtocolHTTPJSON && v != ProtocolGRPC {
		return invalid(path, "must be http/protobuf, http/json or grpc")
	}
	t.Protocol = v
	return nil
}

func buildSampler(r *TracingDoc, lookup func(string) (string, bool), t *Tracing) error {
	if v, path, ok := tracingValue(r.Sampler, EnvTracesSampler, lookup, "sampler"); ok {
		if !containsString(Samplers(), v) {
			return invalid(path, "must be one of "+strings.Join(Samplers(), ", "))
		}
		t.Sampler = v
	}
	arg, path := r.SamplerArg, "tracing.sampler_arg"
	if v, ok := lookup(EnvTracesSamplerArg); ok && v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return invalid(EnvTracesSamplerArg, "must be a number 0-1")
		}
		arg, path = &f, EnvTracesSamplerArg
	}
	if arg != nil {
		if !(*arg >= 0 && *arg <= 1) { // NaN fails too
			return invalid(path, "must be a number 0-1")
		}
		t.SamplerArg = *arg
	}
	return nil
}

// validCollectorURL: an absolute http(s) URL with a host, no user information, no query or fragment,
// at most 2048 bytes. Credentials for a collector go in OTEL_EXPORTER_OTLP_HEADERS, which the exporter
// reads itself and nothing shows.
func validCollectorURL(s string) bool {
	if len(s) > 2048 || strings.ContainsFunc(s, func(r rune) bool { return r <= 0x20 || r == 0x7f }) {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery
}

// validLabel: 1-255 visible ASCII characters or spaces.
func validLabel(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ParseResourceAttributes reads OTEL_RESOURCE_ATTRIBUTES' format: key=value pairs separated by
// commas, spaces around each trimmed, values percent-decoded. "" is none. A pair without '=', an empty
// key, a key or value that is not visible ASCII after decoding, more than 64 pairs or more than 4096
// bytes is refused (ErrInvalid; the error names no part of the input).
func ParseResourceAttributes(s string) ([]Attribute, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if len(s) > maxResourceAttributesBytes {
		return nil, ErrInvalid
	}
	var out []Attribute
	for pair := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || len(out) == maxResourceAttributes {
			return nil, ErrInvalid
		}
		dv, err := url.PathUnescape(v)
		if err != nil || !validLabel(k) || (dv != "" && !validLabel(dv)) {
			return nil, ErrInvalid
		}
		out = append(out, Attribute{Key: k, Value: dv})
	}
	return out, nil
}
