package fakevllm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ErrInvalidFaults reports a fault configuration that fails validation or
// cannot be parsed; the message says which field.
var ErrInvalidFaults = errors.New("invalid faults")

// MaxFaultsBytes bounds a fault configuration document (file or admin body).
const MaxFaultsBytes = 64 << 10

// Faults is one member's complete fault configuration. The zero value injects
// nothing. Every probabilistic fault draws from its own stream of the member's
// seeded generator, so enabling one fault does not shift another's draws.
type Faults struct {
	// HTTPErrors fails generation requests with the given status at the given
	// rate (probability per request); the rates add up to at most 1.
	HTTPErrors []HTTPErrorFault `json:"http_errors,omitempty" yaml:"http_errors,omitempty"`
	// EngineDead kills the engine: /health 503, open streams cut, in-flight
	// ordinary requests 500, new generation requests 503. Clearing it revives
	// the member with an empty engine state.
	EngineDead bool `json:"engine_dead,omitempty" yaml:"engine_dead,omitempty"`
	// SlowStart keeps the member not ready (/health 503, /v1/models empty,
	// generation 503) for this long after the faults are applied.
	SlowStart Duration `json:"slow_start,omitempty" yaml:"slow_start,omitempty"`
	// StepTimeMultiplier stretches every engine step (2 = half speed). 0 means 1.
	StepTimeMultiplier float64 `json:"step_time_multiplier,omitempty" yaml:"step_time_multiplier,omitempty"`
	// Truncate cuts a stream's connection right after data frame Chunk.
	Truncate StreamFault `json:"truncate,omitzero" yaml:"truncate,omitempty"`
	// Malformed replaces data frame Chunk of a stream by invalid JSON.
	Malformed StreamFault `json:"malformed,omitzero" yaml:"malformed,omitempty"`
	// ErrorEvent ends a stream in place of data frame Chunk the way vLLM ends one whose generator
	// raised: an error frame {"error":{...,"code":500}} and then data: [DONE].
	ErrorEvent StreamFault `json:"error_event,omitzero" yaml:"error_event,omitempty"`
	// Metrics breaks GET /metrics.
	Metrics MetricsFault `json:"metrics,omitzero" yaml:"metrics,omitempty"`
	// KVBlocks limits the usable KV blocks (a KV squeeze); 0 means the profile's.
	KVBlocks int `json:"kv_blocks,omitempty" yaml:"kv_blocks,omitempty"`
	// NoUsage makes the member report no token usage, as an engine that does not count would:
	// ordinary answers carry "usage": null, streams send no usage chunk (stream_options.include_usage
	// and continuous_usage_stats are ignored) and a Responses object's usage stays null.
	NoUsage bool `json:"no_usage,omitempty" yaml:"no_usage,omitempty"`
}

// HTTPErrorFault is one status and its per-request probability.
type HTTPErrorFault struct {
	Status int     `json:"status" yaml:"status"`
	Rate   float64 `json:"rate" yaml:"rate"`
}

// StreamFault applies to a stream's data frame number Chunk (1-based) with
// probability Rate per stream. Chunk 0 disables it; Rate 0 with Chunk > 0
// means 1 (always).
type StreamFault struct {
	Chunk int     `json:"chunk,omitempty" yaml:"chunk,omitempty"`
	Rate  float64 `json:"rate,omitempty" yaml:"rate,omitempty"`
}

// MetricsMode selects how GET /metrics misbehaves.
type MetricsMode string

// The /metrics fault modes. MetricsOK ("") serves normally.
const (
	MetricsOK        MetricsMode = ""
	MetricsSlow      MetricsMode = "slow"      // serve after Delay
	MetricsHang      MetricsMode = "hang"      // never answer until the client gives up
	MetricsError     MetricsMode = "error"     // HTTP 500
	MetricsMalformed MetricsMode = "malformed" // 200 with text expfmt cannot parse
	MetricsMissing   MetricsMode = "missing"   // omit the families in Missing
	MetricsOversized MetricsMode = "oversized" // valid text padded past 1 MiB
)

// DefaultMetricsDelay is the slow-mode delay when none is given: past the
// router's 1 s collector timeout.
const DefaultMetricsDelay = 2 * time.Second

// MetricsFault configures the /metrics fault.
type MetricsFault struct {
	Mode MetricsMode `json:"mode,omitempty" yaml:"mode,omitempty"`
	// Delay applies to MetricsSlow (default DefaultMetricsDelay).
	Delay Duration `json:"delay,omitempty" yaml:"delay,omitempty"`
	// Missing lists the family names MetricsMissing omits; empty means the
	// pressure families (running, waiting, KV usage under either name).
	Missing []string `json:"missing,omitempty" yaml:"missing,omitempty"`
}

// pressureFamilies are what a router's pressure adapter reads.
func pressureFamilies() []string {
	return []string{MetricRunning, MetricWaiting, MetricKVUsage, MetricGPUCacheUsage}
}

// Fault bounds: generous, but every value stays far from overflow.
const (
	maxSlowStart    = 24 * time.Hour
	maxMetricsDelay = time.Hour
	maxMultiplier   = 1000.0
	minMultiplier   = 0.001
	maxFaultChunk   = 1_000_000
	maxFaultNames   = 64
	maxNameLen      = 256
)

// Normalize validates f and returns it with defaults filled in (stream-fault
// rate 1, slow-metrics delay). Errors wrap ErrInvalidFaults.
func (f Faults) Normalize() (Faults, error) {
	out := f
	out.HTTPErrors = append([]HTTPErrorFault(nil), f.HTTPErrors...)
	out.Metrics.Missing = append([]string(nil), f.Metrics.Missing...)
	if err := validateHTTPErrors(out.HTTPErrors); err != nil {
		return Faults{}, err
	}
	if d := time.Duration(out.SlowStart); d < 0 || d > maxSlowStart {
		return Faults{}, invalid("slow_start must be between 0 and %s", maxSlowStart)
	}
	m := out.StepTimeMultiplier
	if math.IsNaN(m) || (m != 0 && (m < minMultiplier || m > maxMultiplier)) {
		return Faults{}, invalid("step_time_multiplier must be 0 (off) or between %g and %g", minMultiplier, maxMultiplier)
	}
	var err error
	if out.Truncate, err = out.Truncate.normalize("truncate"); err != nil {
		return Faults{}, err
	}
	if out.Malformed, err = out.Malformed.normalize("malformed"); err != nil {
		return Faults{}, err
	}
	if out.ErrorEvent, err = out.ErrorEvent.normalize("error_event"); err != nil {
		return Faults{}, err
	}
	if out.Metrics, err = out.Metrics.normalize(); err != nil {
		return Faults{}, err
	}
	if out.KVBlocks < 0 {
		return Faults{}, invalid("kv_blocks must not be negative")
	}
	return out, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidFaults, fmt.Sprintf(format, args...))
}

func validateHTTPErrors(errs []HTTPErrorFault) error {
	if len(errs) > 200 {
		return invalid("http_errors has more than 200 entries")
	}
	seen := make(map[int]bool, len(errs))
	sum := 0.0
	for _, e := range errs {
		if e.Status < 400 || e.Status > 599 {
			return invalid("http_errors status %d is not between 400 and 599", e.Status)
		}
		if seen[e.Status] {
			return invalid("http_errors status %d appears twice", e.Status)
		}
		seen[e.Status] = true
		if !(e.Rate >= 0 && e.Rate <= 1) {
			return invalid("http_errors rate for status %d must be between 0 and 1", e.Status)
		}
		sum += e.Rate
	}
	if sum > 1+1e-9 {
		return invalid("http_errors rates add up to %g, more than 1", sum)
	}
	return nil
}

func (s StreamFault) normalize(field string) (StreamFault, error) {
	if s.Chunk < 0 || s.Chunk > maxFaultChunk {
		return s, invalid("%s.chunk must be between 0 and %d", field, maxFaultChunk)
	}
	if !(s.Rate >= 0 && s.Rate <= 1) {
		return s, invalid("%s.rate must be between 0 and 1", field)
	}
	if s.Chunk == 0 {
		return StreamFault{}, nil
	}
	if s.Rate == 0 {
		s.Rate = 1
	}
	return s, nil
}

func (m MetricsFault) normalize() (MetricsFault, error) {
	switch m.Mode {
	case MetricsOK, MetricsSlow, MetricsHang, MetricsError, MetricsMalformed, MetricsMissing, MetricsOversized:
	default:
		return m, invalid("metrics.mode %q is not one of slow, hang, error, malformed, missing, oversized", string(m.Mode))
	}
	if d := time.Duration(m.Delay); d < 0 || d > maxMetricsDelay {
		return m, invalid("metrics.delay must be between 0 and %s", maxMetricsDelay)
	}
	if m.Mode == MetricsSlow && m.Delay == 0 {
		m.Delay = Duration(DefaultMetricsDelay)
	}
	if len(m.Missing) > maxFaultNames {
		return m, invalid("metrics.missing has more than %d names", maxFaultNames)
	}
	for _, n := range m.Missing {
		if n == "" || len(n) > maxNameLen || strings.ContainsAny(n, " \t\r\n{}\"") {
			return m, invalid("metrics.missing name %q is not a metric name", n)
		}
	}
	return m, nil
}

// ParseFaults decodes a YAML or JSON fault document strictly (unknown fields
// are errors) and normalizes it. An empty document is the zero Faults. A
// document whose first non-blank byte is '{' is JSON and decoded as JSON,
// types included: yaml.v3 would take {"engine_dead":"yes"} as true (a YAML
// 1.1 boolean), which no JSON reader does.
func ParseFaults(data []byte) (Faults, error) {
	if len(data) > MaxFaultsBytes {
		return Faults{}, invalid("document larger than %d bytes", MaxFaultsBytes)
	}
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		return parseFaultsJSON(trimmed)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f Faults
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return Faults{}, nil
		}
		return Faults{}, invalid("%s", cleanYAMLError(err))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Faults{}, invalid("more than one document")
	}
	return f.Normalize()
}

// parseFaultsJSON decodes one JSON object strictly: unknown fields, wrong
// types and trailing data are errors.
func parseFaultsJSON(data []byte) (Faults, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f Faults
	if err := dec.Decode(&f); err != nil {
		return Faults{}, invalid("%s", cleanJSONError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Faults{}, invalid("unexpected data after the JSON object")
	}
	return f.Normalize()
}

// cleanJSONError keeps the decoder's message but bounds its length, since
// it may quote the input.
func cleanJSONError(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of JSON input"
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return msg
}

// cleanYAMLError keeps the parser's message but bounds its length, since it
// may quote the input.
func cleanYAMLError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return msg
}

// Duration is a time.Duration that reads and writes as a Go duration string
// ("1.5s") in JSON and YAML.
type Duration time.Duration

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"1.5s\"")
	}
	return d.parse(s)
}

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: duration must be a string like \"1.5s\"", n.Line)
	}
	return d.parse(n.Value)
}

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: want a value like \"1.5s\"", truncateString(s, 40))
	}
	*d = Duration(v)
	return nil
}

func truncateString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
