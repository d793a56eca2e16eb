package load

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

var (
	docsDir     = filepath.Join("..", "..", "..", "docs")
	exampleFile = filepath.Join(docsDir, "examples", "router.yaml")
	configDoc   = filepath.Join(docsDir, "CONFIGURATION.md")
)

// TestDocsExampleParses keeps docs/examples/router.yaml valid, both with
// credentials from its token files and with the environment overriding them.
func TestDocsExampleParses(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	require.NoError(t, err)
	apiEnv := map[string]string{"OPENAI_API_KEY": apiKey}

	files := map[string]string{
		"/etc/anvil/caller-tokens": "# callers\n" + callerTok + "\n" + callerTok2 + "\n",
		"/etc/anvil/admin-token":   adminTok + "\n",
	}
	c, err := ParseWith(data, config.Sources{
		LookupEnv: envMap(apiEnv),
		ReadFile: func(name string) ([]byte, error) {
			if v, ok := files[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		},
	})
	require.NoError(t, err)
	assert.Len(t, c.CallerTokens(), 2)
	llama, ok := c.Alias("chat")
	require.True(t, ok)
	assert.Equal(t, config.StrategyCapacity, llama.Strategy)
	assert.Equal(t, int64(128), llama.EffectiveMaxConcurrency(), "the documented 4 x 32")

	apiEnv[config.EnvAPITokens] = callerTok
	apiEnv[config.EnvAdminToken] = adminTok
	_, err = Parse(data, envMap(apiEnv))
	require.NoError(t, err, "environment overrides make the token files unnecessary")
}

// schemaPaths lists every leaf key of the schema in the notation of
// CONFIGURATION.md: tiers[].members[].id.
func schemaPaths(ty reflect.Type, prefix string) []string {
	for ty.Kind() == reflect.Pointer {
		ty = ty.Elem()
	}
	list := ""
	if ty.Kind() == reflect.Slice {
		ty, list = ty.Elem(), "[]"
	}
	if ty.Kind() != reflect.Struct {
		return []string{prefix}
	}
	var out []string
	for i := range ty.NumField() {
		f := ty.Field(i)
		out = append(out, schemaPaths(f.Type, join(prefix+list, f.Tag.Get("mapstructure")))...)
	}
	return out
}

// TestDocumentedKeys: every key of the schema has a row in CONFIGURATION.md.
func TestDocumentedKeys(t *testing.T) {
	md, err := os.ReadFile(configDoc)
	require.NoError(t, err)
	paths := schemaPaths(reflect.TypeFor[config.Document](), "")
	require.GreaterOrEqual(t, len(paths), 39)
	for _, p := range paths {
		assert.Contains(t, string(md), "| `"+p+"` |", "key %s is not documented", p)
	}
}

// TestDocumentedDefaults: the default column of CONFIGURATION.md matches
// what the loader fills in, read from the normalized form of a document
// that sets nothing optional.
func TestDocumentedDefaults(t *testing.T) {
	md, err := os.ReadFile(configDoc)
	require.NoError(t, err)
	rows := map[string]string{}
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "| `") {
			key, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
			rows[key] = line
		}
	}
	c := mustParse(t, readTestdata(t, "minimal.yaml"), map[string]string{config.EnvAPIToken: callerTok})
	norm, err := c.Normalized()
	require.NoError(t, err)
	var tree map[string]any
	require.NoError(t, yaml.Unmarshal(norm, &tree))
	checked := 0
	for key, val := range flatten(tree, "") {
		row, ok := rows[key]
		if !ok {
			continue // lists (aliases, tiers, tokens) carry no single default
		}
		assert.Contains(t, row, "| `"+val+"` |", "documented default of %s", key)
		checked++
	}
	assert.GreaterOrEqual(t, checked, 13, "every scalar default is checked")
	for _, def := range []string{"tools_allowed", "media_allowed"} {
		assert.Contains(t, rows["tiers[]."+"gates."+def], "| `false` |")
	}
	assert.Contains(t, rows["tiers[].replica_strategy"], "| `round_robin` |")
}

func flatten(m map[string]any, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			for fk, fv := range flatten(v, join(prefix, k)) {
				out[fk] = fv
			}
		case []any:
		default:
			out[join(prefix, k)] = strings.TrimSpace(yamlScalar(v))
		}
	}
	return out
}

func yamlScalar(v any) string {
	b, _ := yaml.Marshal(v)
	return strings.Trim(strings.TrimSpace(string(b)), "'")
}

// TestDocumentedRestartKeys: the restart list of CONFIGURATION.md lists exactly
// config.RestartRequiredKeys.
func TestDocumentedRestartKeys(t *testing.T) {
	data, err := os.ReadFile(configDoc)
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(data), "### Settings that need a restart")
	require.True(t, ok)
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "- `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "- "), ": ")
		for _, part := range strings.Split(first, ",") {
			listed = append(listed, strings.Trim(strings.TrimSpace(part), "`"))
		}
	}
	assert.ElementsMatch(t, config.RestartRequiredKeys(), listed)
}
