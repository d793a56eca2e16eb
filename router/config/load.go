package config

import (
	"bytes"
	"errors"
	"os"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

var errNotRegular = errors.New("not a regular file")

// Sources are the inputs besides the document itself. Both may be nil: a
// nil LookupEnv means an empty environment; a nil ReadFile refuses token
// files (unless the environment overrides them).
type Sources struct {
	// LookupEnv reads one environment variable, like os.LookupEnv.
	LookupEnv func(key string) (string, bool)
	// ReadFile reads a token file. Results longer than MaxTokenFileBytes
	// are refused.
	ReadFile func(name string) ([]byte, error)
}

func (src Sources) lookup(key string) (string, bool) {
	if src.LookupEnv == nil {
		return "", false
	}
	return src.LookupEnv(key)
}

// Load reads the document at path (at most MaxFileBytes), applies the
// ANVIL_ environment overrides from the process environment, reads the
// token files it names and returns the validated Config. A file that
// cannot be read yields an error wrapping ErrUnreadable (and the fs
// error); everything else wraps ErrInvalid.
func Load(path string) (Config, error) {
	data, err := readRegular(path, MaxFileBytes)
	if err != nil {
		return Config{}, unreadable("cannot read config file", err)
	}
	return ParseWith(data, Sources{LookupEnv: os.LookupEnv, ReadFile: ReadTokenFile})
}

// Parse validates a document with environment lookups from env (nil for
// none). It reads no files and no process state, so tests and fuzzing can
// drive it; token files are refused unless env overrides them.
func Parse(data []byte, env func(string) (string, bool)) (Config, error) {
	return ParseWith(data, Sources{LookupEnv: env})
}

// ParseWith validates a document against explicit sources. The pipeline:
// the strict gate over the raw YAML (gate.go), viper decoding into the
// closed raw schema, then semantic validation of settings, tiers, aliases
// and finally credentials (last, because it may read files).
func ParseWith(data []byte, src Sources) (Config, error) {
	if err := gate(data); err != nil {
		return Config{}, err
	}
	raw, err := decode(data)
	if err != nil {
		return Config{}, err
	}
	var c Config
	if err := buildSettings(raw, src.lookup, &c); err != nil {
		return Config{}, err
	}
	if c.tiers, c.tierIndex, err = buildTiers(raw.Tiers, src.lookup); err != nil {
		return Config{}, err
	}
	aliases, byAlias, err := buildAliases(raw.Aliases, c.tierIndex)
	if err != nil {
		return Config{}, err
	}
	c.aliases, c.aliasIndex = aliases, byAlias
	if c.auth, err = buildAuth(raw.Auth, src); err != nil {
		return Config{}, err
	}
	return c, nil
}

// decode runs viper over a document the gate accepted. Viper's defaults
// are loosened for convenience (weak typing, comma-split strings); here
// they are tightened: no weak typing, unknown keys are errors, and only
// the string-to-duration hook runs. Because the gate already checked every
// key and type, a failure here is a bug, reported with a fixed message
// that never echoes mapstructure's text (which quotes values).
func decode(data []byte) (rawConfig, error) {
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return rawConfig{}, invalid("", "document could not be decoded")
	}
	var raw rawConfig
	err := v.Unmarshal(&raw, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
		dc.WeaklyTypedInput = false
		dc.ZeroFields = true
		dc.TagName = "mapstructure"
		dc.DecodeHook = mapstructure.StringToTimeDurationHookFunc()
	})
	if err != nil {
		return rawConfig{}, invalid("", "document could not be decoded")
	}
	return raw, nil
}
