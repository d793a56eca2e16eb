package load

import (
	"reflect"

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
func gate(data []byte) (err error) {
	defer func() {
		// yaml.v3 has panicked on hostile input in past releases; a
		// config loader must return an error, never crash the router.
		if r := recover(); r != nil {
			err = config.Invalid("", "invalid YAML syntax")
		}
	}()
	top, p := yamlschema.Document(data, MaxFileBytes)
	if p == nil {
		p = yamlschema.Check(top, reflect.TypeFor[config.Document](), yamlschema.Options{
			Tag: "mapstructure",
			// A token pasted under the wrong auth key must not be echoed
			// into logs, so unknown keys there are located by line only.
			Quiet: func(path string) bool { return path == "auth" },
		})
	}
	if p != nil {
		return config.Invalid(p.Path, p.Msg)
	}
	return nil
}
