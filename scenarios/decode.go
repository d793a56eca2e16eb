package scenarios

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/anvil-llm/anvil/yamlschema"
)

// MaxBytes bounds a scenario document.
const MaxBytes = 1 << 20

// ErrInvalid is wrapped by every error of Parse: the document is not a valid scenario.
var ErrInvalid = errors.New("invalid scenario")

// Error names the offending path ("tier.members[1].id") and says what is wrong in fixed words; it
// never echoes document values.
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "scenario: " + e.Msg
	}
	return "scenario: " + e.Path + ": " + e.Msg
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }

func invalid(path, msg string) error { return &Error{Path: path, Msg: msg} }

func invalidf(path, format string, args ...any) error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// decode is the strict pass: one YAML document, a mapping at the top, exact known keys only (the
// yaml tags of Scenario), no duplicate keys, no anchors, aliases or merge keys, and every value of
// the YAML type its field needs, all checked by package yamlschema. Only then does yaml.v3 decode
// it, with KnownFields as a second line of defence. The gate exists because yaml.v3's own errors
// name lines, not paths, and quote document text.
func decode(data []byte) (s Scenario, err error) {
	defer func() {
		// A parser of outside input must return an error, never crash the caller.
		if r := recover(); r != nil {
			s, err = Scenario{}, invalid("", "invalid YAML syntax")
		}
	}()
	top, p := yamlschema.Document(data, MaxBytes)
	if p != nil {
		return Scenario{}, invalid(p.Path, p.Msg)
	}
	p = yamlschema.Check(top, reflect.TypeFor[Scenario](), yamlschema.Options{Tag: "yaml", RefuseNull: true})
	if p != nil {
		// Problems with the top-level node itself come with an empty path; this package has always
		// named it "document".
		return Scenario{}, invalid(cmp.Or(p.Path, "document"), p.Msg)
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&s); err != nil {
		return Scenario{}, invalid("", "document could not be decoded") // unreachable after the gate
	}
	return s, nil
}
