package load

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGate covers the strict first pass: what viper alone would merge,
// coerce or ignore is refused here with the offending path.
func TestGate(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want string
	}{
		{"empty", "", "config: empty document"},
		{"comment only", "# nothing\n", "config: empty document"},
		{"scalar root", "hello\n", "config: document must be a mapping"},
		{"list root", "- a\n", "config: document must be a mapping"},
		{"null root", "---\n", "config: document must be a mapping"},
		{"two documents", "listen: a\n---\nlisten: b\n", "config: multiple YAML documents are not supported"},
		{"syntax", "listen: [\n", "config: invalid YAML syntax on line 1"},
		{"tab indent", "tls:\n\tcert_file: x\n", "config: invalid YAML syntax on line 2"},
		{"oversize", "listen: " + strings.Repeat("x", MaxFileBytes) + "\n", "config: document exceeds 1048576 bytes"},
		// Keys: exact case, no duplicates, nothing unknown.
		{"duplicate top-level", "listen: a:1\nlisten: b:2\n", "config: listen: duplicate key"},
		{"duplicate nested", "limits:\n  max_body_bytes: 2048\n  max_body_bytes: 4096\n", "config: limits.max_body_bytes: duplicate key"},
		{"duplicate in list item", "tiers:\n  - id: a\n    kind: direct\n    id: b\n", "config: tiers[0].id: duplicate key"},
		{"duplicate quoted", "listen: a\n\"listen\": b\n", "config: listen: duplicate key"},
		{"mixed case key", "Listen: 127.0.0.1:1\n", "config: Listen: unknown key"},
		{"mixed case twin", "listen: 127.0.0.1:1\nLISTEN: 127.0.0.1:2\n", "config: LISTEN: unknown key"},
		{"mixed case nested", "tiers:\n  - ID: fast\n", "config: tiers[0].ID: unknown key"},
		{"camel case", "decision_log: {ringSize: 5}\n", "config: decision_log.ringSize: unknown key"},
		{"dotted key", "\"limits.max_body_bytes\": 5\n", "config: limits.max_body_bytes: unknown key"},
		{"unknown nested", "upstream: {retries: 3}\n", "config: upstream.retries: unknown key"},
		{"unknown member key", "tiers:\n  - members:\n      - weight: 2\n", "config: tiers[0].members[0].weight: unknown key"},
		{"non-string key", "1: x\n", "config: 1: unknown key"},
		{"odd key", "\"a b\": x\n", "config: document: unknown key on line 1"},
		{"auth unknown key hides name", "auth:\n  SECRET-token-pasted-here: x\n", "config: auth: unknown key on line 2"},
		{"auth plain unknown key hidden too", "auth:\n  token: x\n", "config: auth: unknown key on line 2"},
		{"complex key", "? [a]\n: x\n", "config: document: unknown key on line 1"},
		// YAML features that hide structure.
		{"anchor", "listen: &l 127.0.0.1:1\n", "config: listen: yaml anchors and aliases are not supported"},
		{"alias", "log: &a {level: info}\nreadiness: *a\n", "config: log: yaml anchors and aliases are not supported"},
		{"alias value", "tiers:\n  - id: &x a\n    served_model: *x\n", "config: tiers[0].id: yaml anchors and aliases are not supported"},
		{"merge key", "tiers:\n  - <<: {kind: direct}\n", "config: tiers[0]: yaml merge keys are not supported"},
		{"anchored key", "&k listen: a\n", "config: document: yaml anchors and aliases are not supported"},
		// Types: exactly the YAML type the schema needs.
		{"string got int", "listen: 8080\n", "config: listen: must be a string"},
		{"string got null", "listen:\n", "config: listen: must be a string"},
		{"string got tilde", "listen: ~\n", "config: listen: must be a string"},
		{"string got list", "listen: [a]\n", "config: listen: must be a string"},
		{"string got timestamp", "tiers:\n  - served_model: 2024-01-01\n", "config: tiers[0].served_model: must be a string"},
		{"string got float", "tiers:\n  - served_model: 1.5\n", "config: tiers[0].served_model: must be a string"},
		{"string got bool", "tiers:\n  - id: true\n", "config: tiers[0].id: must be a string"},
		{"string got binary", "listen: !!binary aGVsbG8=\n", "config: listen: must be a string"},
		{"string custom tag", "listen: !env HOME\n", "config: listen: must be a string"},
		{"int got float", "limits: {max_body_bytes: 2048.5}\n", "config: limits.max_body_bytes: must be an integer"},
		{"int got integral float", "limits: {max_body_bytes: 2048.0}\n", "config: limits.max_body_bytes: must be an integer"},
		{"int got exponent", "limits: {max_body_bytes: 1e6}\n", "config: limits.max_body_bytes: must be an integer"},
		{"int got nan", "limits: {max_body_bytes: .nan}\n", "config: limits.max_body_bytes: must be an integer"},
		{"int got inf", "limits: {max_body_bytes: .inf}\n", "config: limits.max_body_bytes: must be an integer"},
		{"int got neg inf", "decision_log: {ring_size: -.Inf}\n", "config: decision_log.ring_size: must be an integer"},
		{"int got string", "limits: {max_body_bytes: \"2048\"}\n", "config: limits.max_body_bytes: must be an integer"},
		{"int got bool", "limits: {max_body_bytes: true}\n", "config: limits.max_body_bytes: must be an integer"},
		{"int overflow", "limits: {max_body_bytes: 9223372036854775808}\n", "config: limits.max_body_bytes: must be an integer"},
		{"int huge", "limits: {max_body_bytes: 99999999999999999999999}\n", "config: limits.max_body_bytes: must be an integer"},
		{"int got null", "tiers:\n  - max_concurrency:\n", "config: tiers[0].max_concurrency: must be an integer"},
		{"bool got yes", "tiers:\n  - gates: {tools_allowed: yes}\n", "config: tiers[0].gates.tools_allowed: must be true or false"},
		{"bool got on", "tiers:\n  - gates: {media_allowed: on}\n", "config: tiers[0].gates.media_allowed: must be true or false"},
		{"bool got int", "tiers:\n  - gates: {media_allowed: 1}\n", "config: tiers[0].gates.media_allowed: must be true or false"},
		{"bool got string", "tiers:\n  - gates: {media_allowed: \"true\"}\n", "config: tiers[0].gates.media_allowed: must be true or false"},
		{"duration got int", "upstream: {timeout: 30}\n", `config: upstream.timeout: must be a duration such as "30s"`},
		{"duration got float", "shutdown_grace: 1.5\n", `config: shutdown_grace: must be a duration such as "30s"`},
		{"duration no unit", "shutdown_grace: \"30\"\n", `config: shutdown_grace: must be a duration such as "30s"`},
		{"duration nan", "shutdown_grace: NaN\n", `config: shutdown_grace: must be a duration such as "30s"`},
		{"duration junk", "readiness: {interval: soon}\n", `config: readiness.interval: must be a duration such as "30s"`},
		{"mapping got list", "limits: [1]\n", "config: limits: must be a mapping"},
		{"mapping got null", "tls:\n", "config: tls: must be a mapping"},
		{"mapping got string", "auth: SECRET-token\n", "config: auth: must be a mapping"},
		{"list got mapping", "tiers: {id: a}\n", "config: tiers: must be a list"},
		{"list got null", "aliases:\n", "config: aliases: must be a list"},
		{"list got string", "aliases: chat\n", "config: aliases: must be a list"},
		{"list item got string", "aliases: [chat]\n", "config: aliases[0]: must be a mapping"},
		{"token list got string", "auth: {caller_tokens: SECRET-aaaaaaaaaaaaaaaa}\n", "config: auth.caller_tokens: must be a list"},
		{"token item got int", "auth: {caller_tokens: [1234567890123456789]}\n", "config: auth.caller_tokens[0]: must be a string"},
		{"custom map tag", "limits: !thing {max_body_bytes: 2048}\n", "config: limits: must be a mapping"},
		{"custom seq tag", "tiers: !thing []\n", "config: tiers: must be a list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), nil)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.True(t, errors.Is(err, config.ErrInvalid))
			assert.NotContains(t, err.Error(), "SECRET")
		})
	}
}

// TestGateAcceptsYAMLVariants: legitimate spellings of the same value
// decode identically (the gate does not over-refuse).
func TestGateAcceptsYAMLVariants(t *testing.T) {
	for name, variant := range map[string]string{
		"hex int":        "0x1000",
		"underscore int": "4_096",
		"plus int":       "+4096",
		"tagged int":     "!!int 4096",
	} {
		t.Run(name, func(t *testing.T) {
			d := loadDoc(t, baseDoc).bytes(t)
			src := string(d) + "limits:\n  max_body_bytes: " + variant + "\n"
			c := mustParse(t, []byte(src), baseEnv())
			assert.Equal(t, int64(4096), c.Limits().MaxBodyBytes)
		})
	}
	t.Run("tagged string", func(t *testing.T) {
		src := string(loadDoc(t, baseDoc).del(t, "listen").bytes(t)) + "listen: !!str 127.0.0.1:1\n"
		assert.Equal(t, "127.0.0.1:1", mustParse(t, []byte(src), baseEnv()).Listen())
	})
	t.Run("bool spellings", func(t *testing.T) {
		src := strings.Replace(baseDoc, "tools_allowed: true", "tools_allowed: True", 1)
		tier, ok := mustParse(t, []byte(src), baseEnv()).Tier("fast")
		require.True(t, ok)
		assert.True(t, tier.Gates.ToolsAllowed)
	})
	t.Run("empty mapping equals absent", func(t *testing.T) {
		src := string(loadDoc(t, baseDoc).bytes(t)) + "tls: {}\nlimits: {}\n"
		c := mustParse(t, []byte(src), baseEnv())
		assert.False(t, c.TLS().Enabled())
		assert.Equal(t, int64(1<<20), c.Limits().MaxBodyBytes)
	})
	t.Run("crlf line endings", func(t *testing.T) {
		src := strings.ReplaceAll(baseDoc, "\n", "\r\n")
		assert.Len(t, mustParse(t, []byte(src), baseEnv()).Tiers(), 3)
	})
}

// TestSchemaTypesSupported walks the raw schema and checks that the gate
// handles every leaf type: a new field of an unsupported type would make
// the gate refuse every document using it.
func TestSchemaTypesSupported(t *testing.T) {
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		switch {
		case ty == durationType, ty.Kind() == reflect.String, ty.Kind() == reflect.Int64, ty.Kind() == reflect.Bool,
			ty.Kind() == reflect.Float64: // tracing.sampler_arg: yamlschema's finite number
		case ty.Kind() == reflect.Struct:
			for i := range ty.NumField() {
				f := ty.Field(i)
				tag := f.Tag.Get("mapstructure")
				require.NotEmpty(t, tag, "%s.%s has no mapstructure tag", path, f.Name)
				assert.Equal(t, strings.ToLower(tag), tag, "keys must be lower case: viper lower-cases them")
				walk(f.Type, join(path, tag))
			}
		default:
			t.Errorf("%s: unsupported schema type %s", path, ty)
		}
	}
	walk(reflect.TypeFor[config.Document](), "")
}

// TestViperAloneIsLenient documents why the gate exists: each of these
// documents decodes through viper without error, silently changing its
// meaning, and each is refused by Parse.
func TestViperAloneIsLenient(t *testing.T) {
	cases := []struct {
		name, doc, want string
		check           func(t *testing.T, raw config.Document)
	}{
		{"case-folded twins merge", "Listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n", "config: Listen: unknown key",
			func(t *testing.T, raw config.Document) { require.NotNil(t, raw.Listen) }},
		{"float truncated", "limits: {max_body_bytes: 2048.9}\n", "config: limits.max_body_bytes: must be an integer",
			func(t *testing.T, raw config.Document) { assert.Equal(t, int64(2048), *raw.Limits.MaxBodyBytes) }},
		{"mixed-case nested key", "tiers: [{ID: fast}]\n", "config: tiers[0].ID: unknown key",
			func(t *testing.T, raw config.Document) { assert.Equal(t, "fast", *raw.Tiers[0].ID) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := decode([]byte(tc.doc))
			require.NoError(t, err, "viper accepts it")
			tc.check(t, raw)
			_, err = Parse([]byte(tc.doc), nil)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// durationType is the one leaf type of the raw schema that is not a basic kind.
var durationType = reflect.TypeFor[time.Duration]()

// join builds the dotted setting paths the gate reports ("" is the top).
func join(path, key string) string { return strings.TrimPrefix(path+"."+key, ".") }
