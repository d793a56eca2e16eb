package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MaxFileBytes bounds the configuration document. A router config with
// 256 tiers of 16 members is far below it.
const MaxFileBytes = 1 << 20

var (
	durationType = reflect.TypeFor[time.Duration]()
	syntaxLine   = regexp.MustCompile(`line (\d+)`)
	plainKey     = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

// gate is the first, strict pass over the raw bytes. Viper cannot be
// trusted with this: it lower-cases keys (so "Listen" and "listen" merge
// silently), mapstructure truncates 2.5 to 2 and wraps a uint64 into a
// negative int64, a bare integer becomes a duration in nanoseconds, and
// yaml.v3 only reports duplicate keys when decoding into Go maps. So the
// document is first parsed into a yaml.Node tree and checked against the
// closed schema (the raw* types, by reflection on their mapstructure
// tags): exactly one document, a mapping at the top, exact-case known keys
// only, no duplicate keys, no anchors/aliases/merge keys, and every value of
// the YAML type its field needs. Anything the gate accepts decodes
// losslessly through viper; FuzzParse checks that claim.
func gate(data []byte) (err error) {
	if len(data) > MaxFileBytes {
		return invalidf("", "document exceeds %d bytes", MaxFileBytes)
	}
	defer func() {
		// yaml.v3 has panicked on hostile input in past releases; a
		// config loader must return an error, never crash the router.
		if r := recover(); r != nil {
			err = invalid("", "invalid YAML syntax")
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return invalid("", "empty document")
		}
		return syntaxError(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return syntaxError(err)
	default:
		return invalid("", "multiple YAML documents are not supported")
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return invalid("", "document must be a mapping")
	}
	return checkNode(doc.Content[0], reflect.TypeFor[rawConfig](), "")
}

// syntaxError keeps only the line number of a yaml.v3 error: its text can
// quote pieces of the document, which may be secrets.
func syntaxError(err error) error {
	if m := syntaxLine.FindStringSubmatch(err.Error()); m != nil {
		return invalidf("", "invalid YAML syntax on line %s", m[1])
	}
	return invalid("", "invalid YAML syntax")
}

func checkNode(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return invalid(path, "yaml anchors and aliases are not supported")
	}
	for t.Kind() == reflect.Pointer {
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
	case t.Kind() == reflect.Int64:
		var v int64
		if !isScalar(n, "!!int") || n.Decode(&v) != nil {
			return invalid(path, "must be an integer")
		}
		return nil
	case t.Kind() == reflect.Bool:
		if !isScalar(n, "!!bool") {
			return invalid(path, "must be true or false")
		}
		return nil
	}
	// Unreachable for the raw* types; TestSchemaTypesSupported pins it.
	return invalid(path, "unsupported schema type")
}

// isScalar reports whether n is a scalar whose resolved tag is tag. The
// resolved tag is what viper's decoder will produce, so "yes" (a string
// in YAML 1.2), .nan and 1e3 (floats) and 2024-01-01 (a timestamp) are all
// refused where an int, bool or string is wanted.
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

// unknownKey names the key when it is a plain word. Inside auth, and for
// anything odd-looking, it names only the line: a token pasted in the
// wrong place must not be echoed into logs.
func unknownKey(path string, k *yaml.Node) error {
	if path != "auth" && k.Kind == yaml.ScalarNode && plainKey.MatchString(k.Value) {
		return invalid(join(path, k.Value), "unknown key")
	}
	return invalidf(orRoot(path), "unknown key on line %d", k.Line)
}

// schemaKeys maps each mapstructure tag of struct type t to its field type.
func schemaKeys(t reflect.Type) map[string]reflect.Type {
	keys := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
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

// orRoot gives messages about the top-level mapping a readable subject.
func orRoot(path string) string {
	if path == "" {
		return "document"
	}
	return path
}
