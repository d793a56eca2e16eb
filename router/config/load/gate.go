package load

import (
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/yamlschema"
)

// MaxFileBytes bounds the configuration document. A router config with
// 256 tiers of 16 members is far below it.
const MaxFileBytes = 1 << 20

// gate is the first, strict pass over the raw bytes. Viper cannot be
// trusted with this: it lower-cases keys (so "Listen" and "listen" merge
// silently), mapstructure truncates 2.5 to 2 and wraps a uint64 into a
// negative int64, a bare integer becomes a duration in nanoseconds, and
// yaml.v3 only reports duplicate keys when decoding into Go maps. So the
// document is first parsed into a yaml.Node tree and checked, by package
// yamlschema, against the closed schema (config.Document, by reflection on
// their mapstructure tags): exactly one document, a mapping at the top, exact-case known keys
// only, no duplicate keys, no anchors/aliases/merge keys, and every value of
// the YAML type its field needs. Anything the gate accepts decodes
// losslessly through viper; FuzzParse checks that claim.
func gate(data []byte) error {
	if _, errs := gateAll(data, false); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// gateAll is the gate returning the document's top node (nil when it does not parse) and its
// problems: only the first unless all, every one the schema walk finds when all.
func gateAll(data []byte, all bool) (top *yaml.Node, errs []error) {
	defer func() {
		// yaml.v3 has panicked on hostile input in past releases; a
		// config loader must return an error, never crash the router.
		if r := recover(); r != nil {
			top, errs = nil, []error{config.Invalid("", "invalid YAML syntax")}
		}
	}()
	top, p := yamlschema.Document(data, MaxFileBytes)
	if p != nil {
		return nil, []error{config.Invalid(p.Path, p.Msg)}
	}
	o := yamlschema.Options{
		Tag: "mapstructure",
		// A token pasted under the wrong auth key must not be echoed
		// into logs, so unknown keys there are located by line only.
		Quiet: func(path string) bool { return path == "auth" },
	}
	var ps []*yamlschema.Problem
	if all {
		ps = yamlschema.CheckAll(top, reflect.TypeFor[config.Document](), o)
	} else if p := yamlschema.Check(top, reflect.TypeFor[config.Document](), o); p != nil {
		ps = append(ps, p)
	}
	for _, p := range ps {
		errs = append(errs, config.Invalid(p.Path, p.Msg))
	}
	return top, errs
}
