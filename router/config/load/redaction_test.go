package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestRedaction prints a config.Config, its tiers and its secrets every way a
// careless caller might, and checks that no credential ever shows.
func TestRedaction(t *testing.T) {
	c := mustParse(t, []byte(baseDoc), baseEnv())
	big, ok := c.Tier("big")
	require.True(t, ok)
	secrets := []string{callerTok, adminTok, apiKey}

	var rendered []string
	for _, v := range []any{c, &c, big, &big, big.APIKey, c.AdminToken(), c.CallerTokens(), c.Tiers()} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
			rendered = append(rendered, fmt.Sprintf(verb, v))
		}
	}
	norm, err := c.Normalized()
	require.NoError(t, err)
	rendered = append(rendered, string(norm), c.String(), c.GoString())

	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	logger.Info("loaded", "config", c, "tier", big, "key", big.APIKey, "admin", c.AdminToken())
	slog.New(slog.NewTextHandler(&logs, nil)).Info("loaded", "config", c, "tier", big, "tokens", c.CallerTokens())
	rendered = append(rendered, logs.String())

	j, err := json.Marshal(struct {
		Tier   config.Tier
		Tokens []config.Secret
		Admin  config.Secret
	}{big, c.CallerTokens(), c.AdminToken()})
	require.NoError(t, err)
	y, err := yaml.Marshal(big)
	require.NoError(t, err)
	rendered = append(rendered, string(j), string(y))

	for _, r := range rendered {
		for _, s := range secrets {
			require.NotContains(t, r, s)
			require.NotContains(t, r, fmt.Sprintf("%x", s), "hex-encoded secret")
		}
	}
	assert.Contains(t, string(j), `"APIKey":"[redacted]"`)
	assert.Contains(t, logs.String(), `"key":"[redacted]"`)
	assert.Equal(t, "[redacted]", fmt.Sprint(big.APIKey))
	assert.Equal(t, `config.Secret("[redacted]")`, fmt.Sprintf("%#v", big.APIKey))
	assert.Equal(t, "config{listen=127.0.0.1:9000 tls=false tiers=3 aliases=4 caller_tokens=1 observer_tokens=0 admin_token=true}", c.String())
	assert.Equal(t, "config.Config{listen=127.0.0.1:9000 tls=false tiers=3 aliases=4 caller_tokens=1 observer_tokens=0 admin_token=true}", fmt.Sprintf("%#v", c))
}

// TestErrorsNeverEchoValues feeds secrets into every place where a bad
// value is refused and checks the error does not repeat it.
func TestErrorsNeverEchoValues(t *testing.T) {
	const leak = "LEAKY-VALUE-0123456789"
	docs := []string{
		"listen: " + leak + "\n",
		"auth:\n  admin_token: " + leak + " x\n",
		"auth:\n  " + leak + ": x\n",
		"auth: " + leak + "\n",
		"auth: {caller_tokens: [\"" + leak + " x\"]}\n",
		"tiers:\n  - id: " + leak + "\n",
		"tiers: [{kind: " + leak + "}]\n",
		"limits: {max_body_bytes: " + leak + "}\n",
		"upstream: {timeout: " + leak + "}\n",
		"listen: \"" + leak + "\n",
		"listen: [" + leak + "\n",
		"{" + leak + "\n",
		"listen: '" + leak + "\n",
		"auth:\n  caller_tokens: [x]\n\t" + leak + "\n",
	}
	for _, d := range docs {
		_, err := Parse([]byte(d), envMap(map[string]string{config.EnvAdminToken: leak + " bad"}))
		require.Error(t, err, d)
		assert.NotContains(t, err.Error(), leak, "document %q", d)
		assert.NotContains(t, strings.ToLower(err.Error()), strings.ToLower(leak))
	}
}
