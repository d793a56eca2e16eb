// Package load reads the router's YAML configuration into a validated config.Config: the strict YAML
// gate, viper decoding into config.Document, the process environment and token files. It is the only
// router package that imports viper, and it is kept apart from router/config so that the validated model
// (and everything that only needs the model, such as routing and the simulator) never links viper.
//
// Reading guide:
//
//   - load.go: File (file + process environment + token files), Parse (pure, for tests and fuzzing),
//     ParseWith (explicit Sources) and the pipeline.
//   - gate.go: the strict first pass over the raw bytes with yaml.v3. It exists because viper alone is
//     lenient in ways a closed schema cannot accept: it lower-cases keys (Listen and listen silently
//     merge), yaml.v3 reports duplicate keys only when decoding into Go maps, and viper's mapstructure
//     decoding truncates 2.5 to 2, wraps large integers and reads a bare 30 as 30ns. The gate refuses
//     duplicate keys, unknown or mixed-case keys, anchors, aliases, merge keys, multiple documents and
//     any value whose YAML type differs from the schema, naming the path.
//   - files.go: reading the config file and token files (regular files only, bounded).
//   - source.go: Source, the file as start-up and every reload read it (digest, changed-while-read
//     refusal, and the Fingerprint that serve --watch polls).
//
// Every refusal is a *config.Error wrapping config.ErrInvalid (or config.ErrUnreadable when the file
// itself cannot be read) with the text "config: PATH: MESSAGE". docs/CONFIGURATION.md documents every
// key, default and rule.
package load

import (
	"bytes"
	"context"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/anvil-llm/anvil/router/config"
)

// File reads the document at path (at most MaxFileBytes), applies the ANVIL_ environment overrides
// from the process environment, reads the token files it names and returns the validated Config. A
// file that cannot be read yields an error wrapping config.ErrUnreadable (and the fs error);
// everything else wraps config.ErrInvalid.
// It is NewSource(path, nil).Load without a context, so `config check` reads a file exactly as serve
// does.
func File(path string) (config.Config, error) {
	l, err := NewSource(path, nil).Load(context.Background())
	return l.Config, err
}

// Parse validates a document with environment lookups from env (nil for none). It reads no files and
// no process state, so tests and fuzzing can drive it; token files are refused unless env overrides
// them.
func Parse(data []byte, env func(string) (string, bool)) (config.Config, error) {
	return ParseWith(data, config.Sources{LookupEnv: env})
}

// ParseWith validates a document against explicit sources. The pipeline: the strict gate over the raw
// YAML (gate.go), viper decoding into the closed schema, then config.Build's semantic validation.
func ParseWith(data []byte, src config.Sources) (config.Config, error) {
	doc, err := parseDocument(data)
	if err != nil {
		return config.Config{}, err
	}
	return config.Build(doc, src)
}

// parseDocument is the pipeline up to config.Build: the gate, then viper.
func parseDocument(data []byte) (config.Document, error) {
	if err := gate(data); err != nil {
		return config.Document{}, err
	}
	return decode(data)
}

// decode runs viper over a document the gate accepted. Viper's defaults are loosened for convenience
// (weak typing, comma-split strings); here they are tightened: no weak typing, unknown keys are errors,
// and only the string-to-duration hook runs. Because the gate already checked every key and type, a
// failure here is a bug, reported with a fixed message that never echoes mapstructure's text (which
// quotes values).
func decode(data []byte) (config.Document, error) {
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return config.Document{}, config.Invalid("", "document could not be decoded")
	}
	var doc config.Document
	err := v.Unmarshal(&doc, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
		dc.WeaklyTypedInput = false
		dc.ZeroFields = true
		dc.TagName = "mapstructure"
		dc.DecodeHook = mapstructure.StringToTimeDurationHookFunc()
	})
	if err != nil {
		return config.Document{}, config.Invalid("", "document could not be decoded")
	}
	return doc, nil
}
