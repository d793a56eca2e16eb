package profile

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/anvil-llm/anvil/engine"
)

// MaxFileBytes bounds a profile file.
const MaxFileBytes = 64 << 10

// ErrInvalid is wrapped by every Parse error.
var ErrInvalid = errors.New("invalid profile")

// FieldError names the field (a YAML key, or "" for the document) that made
// a profile invalid. Problems are fixed texts; no input is echoed.
type FieldError struct {
	Line    int    // 1-based line of the offending node; 0 when not tied to one
	Field   string // the key; unknown keys are quoted and truncated to 64 bytes
	Problem string
	cause   error // an *engine.ProfileError for range violations
}

func (e *FieldError) Error() string {
	msg := "profile: "
	if e.Line > 0 {
		msg += "line " + strconv.Itoa(e.Line) + ": "
	}
	if e.Field != "" {
		msg += "field " + e.Field + ": "
	}
	return msg + e.Problem
}

// Unwrap exposes ErrInvalid and, for range violations, the engine's
// *engine.ProfileError (which wraps engine.ErrInvalidProfile).
func (e *FieldError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrInvalid, e.cause}
	}
	return []error{ErrInvalid}
}

// keys lists the profile keys in document order.
func keys() []string {
	return []string{"name", "step_base", "prefill_per_token", "decode_per_seq", "context_per_token",
		"jitter", "max_num_seqs", "max_num_batched_tokens", "max_model_len", "num_gpu_blocks", "block_size"}
}

// Parse decodes one profile document strictly and validates it with
// engine.Profile.Validate. Every error wraps ErrInvalid and is a *FieldError.
func Parse(data []byte) (engine.Profile, error) {
	fields, err := mapping(data)
	if err != nil {
		return engine.Profile{}, err
	}
	d := decoder{fields: fields}
	p := engine.Profile{
		Name:                d.name("name"),
		StepBase:            d.duration("step_base"),
		PrefillPerToken:     d.duration("prefill_per_token"),
		DecodePerSeq:        d.duration("decode_per_seq"),
		ContextPerToken:     d.duration("context_per_token"),
		Jitter:              d.float("jitter"),
		MaxNumSeqs:          d.integer("max_num_seqs", true),
		MaxNumBatchedTokens: d.integer("max_num_batched_tokens", true),
		MaxModelLen:         d.integer("max_model_len", false),
		NumGPUBlocks:        d.integer("num_gpu_blocks", true),
		BlockSize:           d.integer("block_size", true),
	}
	if d.err != nil {
		return engine.Profile{}, d.err
	}
	if err := p.Validate(); err != nil {
		var pe *engine.ProfileError
		if errors.As(err, &pe) {
			line := 0
			if v, ok := fields[pe.Field]; ok {
				line = v.Line
			}
			return engine.Profile{}, &FieldError{Line: line, Field: pe.Field, Problem: pe.Problem, cause: pe}
		}
		return engine.Profile{}, &FieldError{Problem: "invalid values", cause: err}
	}
	return p, nil
}

// mapping parses exactly one YAML document holding a flat mapping of known,
// unique keys to scalars, and returns the value node of every key present.
func mapping(data []byte) (map[string]*yaml.Node, error) {
	if len(data) > MaxFileBytes {
		return nil, &FieldError{Problem: "file larger than 64 KiB"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Problem: "empty document"}
		}
		return nil, &FieldError{Problem: "not valid YAML"}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &FieldError{Problem: "more than one YAML document"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &FieldError{Problem: "document must be a mapping of profile fields"}
	}
	root := doc.Content[0]
	known := keys()
	fields := make(map[string]*yaml.Node, len(known))
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			return nil, &FieldError{Line: k.Line, Problem: "field names must be plain strings"}
		}
		if !slices.Contains(known, k.Value) {
			return nil, &FieldError{Line: k.Line, Field: quoteKey(k.Value), Problem: "unknown field (known: " +
				strings.Join(known, ", ") + ")"}
		}
		if _, dup := fields[k.Value]; dup {
			return nil, &FieldError{Line: k.Line, Field: k.Value, Problem: "given more than once"}
		}
		if v.Kind != yaml.ScalarNode {
			return nil, &FieldError{Line: v.Line, Field: k.Value, Problem: "must be a single value, not a list, mapping or alias"}
		}
		fields[k.Value] = v
	}
	return fields, nil
}

func quoteKey(k string) string {
	if len(k) > 64 {
		k = k[:64]
	}
	return strconv.QuoteToASCII(k)
}

// decoder extracts typed values and keeps the first error, in field order.
type decoder struct {
	fields map[string]*yaml.Node
	err    error
}

func (d *decoder) fail(field, problem string) {
	if d.err != nil {
		return
	}
	line := 0
	if v, ok := d.fields[field]; ok {
		line = v.Line
	}
	d.err = &FieldError{Line: line, Field: field, Problem: problem}
}

// get returns the scalar for key when it has the wanted tag.
func (d *decoder) get(key, tag string, required bool, problem string) (string, bool) {
	v, ok := d.fields[key]
	if !ok {
		if required {
			d.fail(key, "is required")
		}
		return "", false
	}
	if v.Tag != tag {
		d.fail(key, problem)
		return "", false
	}
	return v.Value, true
}

func (d *decoder) name(key string) string {
	s, _ := d.get(key, "!!str", true, "must be a string")
	return s
}

func (d *decoder) duration(key string) time.Duration {
	const problem = "must be a duration string such as 5.75ms, 17us or 40ns"
	s, ok := d.get(key, "!!str", true, problem)
	if !ok {
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.fail(key, problem)
		return 0
	}
	return v
}

func (d *decoder) integer(key string, required bool) int {
	const problem = "must be an integer"
	s, ok := d.get(key, "!!int", required, problem)
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < math.MinInt32 || v > math.MaxInt32 {
		d.fail(key, "must be a decimal integer within ±2147483647")
		return 0
	}
	return int(v)
}

func (d *decoder) float(key string) float64 {
	const problem = "must be a number"
	v, ok := d.fields[key]
	if !ok {
		return 0
	}
	if v.Tag != "!!float" && v.Tag != "!!int" {
		d.fail(key, problem)
		return 0
	}
	f, err := strconv.ParseFloat(v.Value, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.fail(key, "must be a finite decimal number")
		return 0
	}
	return f
}
