package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
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

var (
	durationType = reflect.TypeFor[time.Duration]()
	syntaxLine   = regexp.MustCompile(`line (\d+)`)
	plainKey     = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

// decode is the strict pass: one YAML document, a mapping at the top, exact known keys only (the
// yaml tags of Scenario), no duplicate keys, no anchors, aliases or merge keys, and every value of
// the YAML type its field needs. Only then does yaml.v3 decode it, with KnownFields as a second
// line of defence. The gate exists because yaml.v3's own errors name lines, not paths, and quote
// document text.
func decode(data []byte) (s Scenario, err error) {
	if len(data) > MaxBytes {
		return Scenario{}, invalidf("", "document exceeds %d bytes", MaxBytes)
	}
	defer func() {
		// A parser of outside input must return an error, never crash the caller.
		if r := recover(); r != nil {
			s, err = Scenario{}, invalid("", "invalid YAML syntax")
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Scenario{}, invalid("", "empty document")
		}
		return Scenario{}, syntaxError(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return Scenario{}, syntaxError(err)
	default:
		return Scenario{}, invalid("", "multiple YAML documents are not supported")
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return Scenario{}, invalid("", "document must be a mapping")
	}
	if err := checkNode(doc.Content[0], reflect.TypeFor[Scenario](), ""); err != nil {
		return Scenario{}, err
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&s); err != nil {
		return Scenario{}, invalid("", "document could not be decoded") // unreachable after the gate
	}
	return s, nil
}

// syntaxError keeps only yaml.v3's line number.
func syntaxError(err error) error {
	if m := syntaxLine.FindStringSubmatch(err.Error()); m != nil {
		return invalidf("", "invalid YAML syntax on line %s", m[1])
	}
	return invalid("", "invalid YAML syntax")
}

func checkNode(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return invalid(orRoot(path), "yaml anchors and aliases are not supported")
	}
	if t.Kind() == reflect.Pointer {
		if isScalar(n, "!!null") {
			return invalid(path, "must not be null")
		}
		t = t.Elem()
	}
	switch {
	case t == durationType:
		if !isScalar(n, "!!str") {
			return invalid(path, `must be a duration such as "30s"`)
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return invalid(path, `must be a duration such as "30s"`)
		}
		return nil
	case t.Kind() == reflect.Struct:
		return checkMapping(n, t, path)
	case t.Kind() == reflect.Slice:
		return checkSequence(n, t.Elem(), path)
	case t.Kind() == reflect.String:
		if !isScalar(n, "!!str") {
			return invalid(path, "must be a string")
		}
		return nil
	case t.Kind() == reflect.Bool:
		if !isScalar(n, "!!bool") {
			return invalid(path, "must be true or false")
		}
		return nil
	case t.Kind() == reflect.Float64:
		return checkFloat(n, path)
	}
	return checkInt(n, t, path)
}

func checkInt(n *yaml.Node, t reflect.Type, path string) error {
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		var v int64
		if !isScalar(n, "!!int") || n.Decode(&v) != nil {
			return invalid(path, "must be an integer")
		}
		return nil
	case reflect.Uint64:
		var v uint64
		if !isScalar(n, "!!int") || n.Decode(&v) != nil {
			return invalid(path, "must be a non-negative integer")
		}
		return nil
	}
	// Unreachable for Scenario's types; TestSchemaTypesSupported pins it.
	return invalid(path, "unsupported schema type")
}

func checkFloat(n *yaml.Node, path string) error {
	if !isScalar(n, "!!int") && !isScalar(n, "!!float") {
		return invalid(path, "must be a number")
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil {
		var f float64
		if n.Decode(&f) != nil {
			return invalid(path, "must be a number")
		}
		v = f
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return invalid(path, "must be a finite number")
	}
	return nil
}

// isScalar reports whether n is a scalar whose resolved tag is tag, so "yes" (a string in YAML 1.2)
// is refused where a bool is wanted and 1e3 where an integer is.
func isScalar(n *yaml.Node, tag string) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == tag
}

func checkMapping(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind != yaml.MappingNode || n.ShortTag() != "!!map" {
		return invalid(orRoot(path), "must be a mapping")
	}
	fields := schemaKeys(t)
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode || k.Anchor != "" {
			return invalid(orRoot(path), "yaml anchors and aliases are not supported")
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			return invalid(orRoot(path), "yaml merge keys are not supported")
		}
		ft, known := fields[k.Value]
		if !isScalar(k, "!!str") || !known {
			return unknownKey(path, k)
		}
		keyPath := join(path, k.Value)
		if seen[k.Value] {
			return invalid(keyPath, "duplicate key")
		}
		seen[k.Value] = true
		if err := checkNode(v, ft, keyPath); err != nil {
			return err
		}
	}
	return nil
}

func checkSequence(n *yaml.Node, elem reflect.Type, path string) error {
	if n.Kind != yaml.SequenceNode || n.ShortTag() != "!!seq" {
		return invalid(path, "must be a list")
	}
	for i, item := range n.Content {
		if err := checkNode(item, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// unknownKey names a plain-word key; anything odd-looking is located by line only, so the error
// never echoes arbitrary document text.
func unknownKey(path string, k *yaml.Node) error {
	if k.Kind == yaml.ScalarNode && plainKey.MatchString(k.Value) {
		return invalid(join(path, k.Value), "unknown key")
	}
	return invalidf(orRoot(path), "unknown key on line %d", k.Line)
}

// schemaKeys maps each yaml tag of struct type t to its field type.
func schemaKeys(t reflect.Type) map[string]reflect.Type {
	keys := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		keys[name] = f.Type
	}
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "document"
	}
	return path
}
