package yamlschema

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Options adapt the walk to one schema.
type Options struct {
	// Tag is the struct tag whose name (before any comma) is a field's YAML key, such as
	// "mapstructure" or "yaml". Fields without it are reachable only by the empty key.
	Tag string
	// RefuseNull refuses null for a pointer field with "must not be null". Without it a pointer
	// is transparent: null is refused by the pointee's own type message.
	RefuseNull bool
	// Quiet reports whether unknown keys of the mapping at path are located by line only, even
	// when they are plain words: a secret pasted in the wrong place must not be echoed. May be nil.
	Quiet func(path string) bool

	all *[]*Problem // CheckAll's collection: every problem, the walk continuing past each
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	plainKey     = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

// Check walks top, normally from Document, against the struct type schema (or a pointer to one)
// and returns the first problem in document order, or nil. The leaf types it knows are string,
// bool, int and int64, uint64, float64 (finite only) and time.Duration (a string such as "30s");
// a field of any other type refuses every value with "unsupported schema type".
func Check(top *yaml.Node, schema reflect.Type, o Options) *Problem {
	o.all = nil
	return o.node(top, schema, "")
}

// CheckAll is Check reporting every problem in document order, not only the first: the walk goes
// on with the next key or item after each one. A problem that hides what is under it (a value
// that is not the mapping or list its schema needs) is reported once, for the node itself.
func CheckAll(top *yaml.Node, schema reflect.Type, o Options) []*Problem {
	var all []*Problem
	o.all = &all
	if p := o.node(top, schema, ""); p != nil {
		all = append(all, p)
	}
	return all
}

// report hands p to CheckAll's collection and says whether the walk goes on (collecting) or
// returns p (Check, the first problem only).
func (o Options) report(p *Problem) bool {
	if o.all == nil {
		return false
	}
	*o.all = append(*o.all, p)
	return true
}

func (o Options) node(n *yaml.Node, t reflect.Type, path string) *Problem {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return problem(path, "yaml anchors and aliases are not supported")
	}
	for t.Kind() == reflect.Pointer {
		if o.RefuseNull && isScalar(n, "!!null") {
			return problem(path, "must not be null")
		}
		t = t.Elem()
	}
	switch {
	case t == durationType:
		if !isScalar(n, "!!str") {
			return problem(path, `must be a duration such as "30s"`)
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return problem(path, `must be a duration such as "30s"`)
		}
		return nil
	case t.Kind() == reflect.Struct:
		return o.mapping(n, t, path)
	case t.Kind() == reflect.Slice:
		return o.sequence(n, t.Elem(), path)
	}
	return leaf(n, t.Kind(), path)
}

// leaf checks a scalar against a basic kind.
func leaf(n *yaml.Node, k reflect.Kind, path string) *Problem {
	switch k {
	case reflect.String:
		if !isScalar(n, "!!str") {
			return problem(path, "must be a string")
		}
	case reflect.Bool:
		if !isScalar(n, "!!bool") {
			return problem(path, "must be true or false")
		}
	case reflect.Int, reflect.Int64:
		var v int64
		if !isScalar(n, "!!int") || n.Decode(&v) != nil {
			return problem(path, "must be an integer")
		}
	case reflect.Uint64:
		var v uint64
		if !isScalar(n, "!!int") || n.Decode(&v) != nil {
			return problem(path, "must be a non-negative integer")
		}
	case reflect.Float64:
		return number(n, path)
	default:
		return problem(path, "unsupported schema type")
	}
	return nil
}

// number accepts an integer or float scalar with a finite value: .nan and .inf are floats to YAML
// but meaningless as settings.
func number(n *yaml.Node, path string) *Problem {
	if !isScalar(n, "!!int") && !isScalar(n, "!!float") {
		return problem(path, "must be a number")
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil {
		// YAML spellings ParseFloat does not know (.5e1 forms, 0o17, .Inf) go through yaml.v3.
		var f float64
		if n.Decode(&f) != nil {
			return problem(path, "must be a number")
		}
		v = f
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return problem(path, "must be a finite number")
	}
	return nil
}

// isScalar reports whether n is a scalar whose resolved tag is tag. The resolved tag is what a
// decoder will produce, so "yes" (a string in YAML 1.2), .nan and 1e3 (floats) and 2024-01-01 (a
// timestamp) are all refused where an int, bool or string is wanted.
func isScalar(n *yaml.Node, tag string) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == tag
}

func (o Options) mapping(n *yaml.Node, t reflect.Type, path string) *Problem {
	if n.Kind != yaml.MappingNode || n.ShortTag() != "!!map" {
		return problem(orDocument(path), "must be a mapping")
	}
	fields := o.keys(t)
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if p := o.entry(k, v, fields, seen, path); p != nil && !o.report(p) {
			return p
		}
	}
	return nil
}

// entry checks one key of a mapping and its value.
func (o Options) entry(k, v *yaml.Node, fields map[string]reflect.Type, seen map[string]bool, path string) *Problem {
	if k.Kind == yaml.AliasNode || k.Anchor != "" {
		return problem(orDocument(path), "yaml anchors and aliases are not supported")
	}
	if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
		return problem(orDocument(path), "yaml merge keys are not supported")
	}
	ft, known := fields[k.Value]
	if !isScalar(k, "!!str") || !known {
		return o.unknownKey(path, k)
	}
	keyPath := join(path, k.Value)
	if seen[k.Value] {
		return problem(keyPath, "duplicate key")
	}
	seen[k.Value] = true
	return o.node(v, ft, keyPath)
}

func (o Options) sequence(n *yaml.Node, elem reflect.Type, path string) *Problem {
	if n.Kind != yaml.SequenceNode || n.ShortTag() != "!!seq" {
		return problem(path, "must be a list")
	}
	for i, item := range n.Content {
		if p := o.node(item, elem, fmt.Sprintf("%s[%d]", path, i)); p != nil && !o.report(p) {
			return p
		}
	}
	return nil
}

// unknownKey names the key when it is a plain word outside a quiet mapping; anything else is
// located by line only, so the problem never echoes arbitrary document text.
func (o Options) unknownKey(path string, k *yaml.Node) *Problem {
	quiet := o.Quiet != nil && o.Quiet(path)
	if !quiet && k.Kind == yaml.ScalarNode && plainKey.MatchString(k.Value) {
		return problem(join(path, k.Value), "unknown key")
	}
	return problem(orDocument(path), fmt.Sprintf("unknown key on line %d", k.Line))
}

// keys maps each key of struct type t, read from the o.Tag tag, to its field type.
func (o Options) keys(t reflect.Type) map[string]reflect.Type {
	keys := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get(o.Tag), ",")
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

// orDocument gives problems with the top-level mapping's content a readable subject.
func orDocument(path string) string {
	if path == "" {
		return "document"
	}
	return path
}
