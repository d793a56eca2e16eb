package load

import (
	"errors"
	"testing"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func revealAll(ss []config.Secret) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Reveal()
	}
	return out
}

func TestEnvOverrides(t *testing.T) {
	fileTokensDoc := loadDoc(t, baseDoc).del(t, "auth.caller_tokens").del(t, "auth.admin_token").
		set(t, "auth.caller_tokens_file", "/nonexistent/tokens").
		set(t, "auth.admin_token_file", "/nonexistent/admin").bytes(t)
	cases := []struct {
		name       string
		doc        []byte
		env        map[string]string
		wantListen string
		wantCaller []string
		wantAdmin  string
	}{
		{"file values", []byte(baseDoc), nil, "127.0.0.1:9000", []string{callerTok}, adminTok},
		{"listen override", []byte(baseDoc), map[string]string{config.EnvListen: "[::1]:0"}, "[::1]:0", []string{callerTok}, adminTok},
		{"empty env is unset", []byte(baseDoc), map[string]string{config.EnvListen: "", config.EnvAPIToken: "", config.EnvAPITokens: "", config.EnvAdminToken: ""}, "127.0.0.1:9000", []string{callerTok}, adminTok},
		{"single token replaces inline", []byte(baseDoc), map[string]string{config.EnvAPIToken: callerTok2}, "127.0.0.1:9000", []string{callerTok2}, adminTok},
		{"token list", []byte(baseDoc), map[string]string{config.EnvAPITokens: callerTok + " , " + callerTok2}, "127.0.0.1:9000", []string{callerTok, callerTok2}, adminTok},
		{"list and single combine", []byte(baseDoc), map[string]string{config.EnvAPITokens: callerTok, config.EnvAPIToken: callerTok2}, "127.0.0.1:9000", []string{callerTok, callerTok2}, adminTok},
		{"admin override", []byte(baseDoc), map[string]string{config.EnvAdminToken: "admin-from-env-eeeeeeeeeeee"}, "127.0.0.1:9000", []string{callerTok}, "admin-from-env-eeeeeeeeeeee"},
		// The environment wins over files without reading them: the
		// files named here do not exist and Parse has no file reader.
		{"env replaces token files", fileTokensDoc, map[string]string{config.EnvAPIToken: callerTok, config.EnvAdminToken: adminTok}, "127.0.0.1:9000", []string{callerTok}, adminTok},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := baseEnv()
			for k, v := range tc.env {
				env[k] = v
			}
			c := mustParse(t, tc.doc, env)
			assert.Equal(t, tc.wantListen, c.Listen())
			assert.Equal(t, tc.wantCaller, revealAll(c.CallerTokens()))
			assert.Equal(t, tc.wantAdmin, c.AdminToken().Reveal())
		})
	}
}

func TestEnvOverrideErrors(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad listen", map[string]string{config.EnvListen: "nope"}, "config: ANVIL_LISTEN: must be host:port with a port 0-65535"},
		{"bad single token", map[string]string{config.EnvAPIToken: "SECRET short"}, "config: ANVIL_API_TOKEN: " + tokenRule},
		{"bad list element", map[string]string{config.EnvAPITokens: callerTok + ",SECRET-short"}, "config: ANVIL_API_TOKENS[1]: " + tokenRule},
		{"trailing comma", map[string]string{config.EnvAPITokens: callerTok + ","}, "config: ANVIL_API_TOKENS[1]: " + tokenRule},
		{"duplicate across env", map[string]string{config.EnvAPITokens: callerTok, config.EnvAPIToken: callerTok}, "config: ANVIL_API_TOKEN: duplicate token"},
		{"bad admin", map[string]string{config.EnvAdminToken: "SECRET"}, "config: ANVIL_ADMIN_TOKEN: " + tokenRule},
		{"admin equals env caller", map[string]string{config.EnvAPIToken: callerTok2, config.EnvAdminToken: callerTok2}, "config: ANVIL_ADMIN_TOKEN: must differ from every caller token"},
		{"admin from file doc equals env caller", map[string]string{config.EnvAPIToken: adminTok}, "config: auth.admin_token: must differ from every caller token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := baseEnv()
			for k, v := range tc.env {
				env[k] = v
			}
			_, err := Parse([]byte(baseDoc), envMap(env))
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.True(t, errors.Is(err, config.ErrInvalid))
			assert.NotContains(t, err.Error(), "SECRET")
		})
	}
}

func TestNoAdminTokenDisablesAdmin(t *testing.T) {
	c := mustParse(t, loadDoc(t, baseDoc).del(t, "auth.admin_token").bytes(t), baseEnv())
	assert.True(t, c.AdminToken().IsZero())
	assert.False(t, c.AdminToken().Matches(""))
}

func TestAPIKeyFromEnv(t *testing.T) {
	c := mustParse(t, []byte(baseDoc), baseEnv())
	big, ok := c.Tier("big")
	require.True(t, ok)
	assert.Equal(t, "BIG_API_KEY", big.APIKeyEnv)
	assert.Equal(t, apiKey, big.APIKey.Reveal())
	fast, _ := c.Tier("fast")
	assert.True(t, fast.APIKey.IsZero())
}

// TestNilEnv: Parse with a nil lookup sees an empty environment.
func TestNilEnv(t *testing.T) {
	_, err := Parse([]byte(baseDoc), nil)
	require.Error(t, err)
	assert.Equal(t, "config: tiers[2].api_key_env: environment variable is not set", err.Error())
	c, err := Parse(loadDoc(t, baseDoc).del(t, "tiers[2].api_key_env").bytes(t), nil)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9000", c.Listen())
}

func TestWithListen(t *testing.T) {
	c := mustParse(t, []byte(baseDoc), baseEnv())
	c2, err := c.WithListen("127.0.0.1:0")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:0", c2.Listen())
	assert.Equal(t, "127.0.0.1:9000", c.Listen(), "the original is unchanged")
	assert.Equal(t, c.Tiers(), c2.Tiers())
	_, err = c.WithListen("nope")
	require.Error(t, err)
	assert.Equal(t, "config: listen: must be host:port with a port 0-65535", err.Error())
	assert.True(t, errors.Is(err, config.ErrInvalid))
}

// TestEnvOverrideIgnoresFileValues: values the environment replaces are not
// validated (the normalized output's "[redacted]" placeholders rely on
// this), while the document's structure still is.
func TestEnvOverrideIgnoresFileValues(t *testing.T) {
	env := baseEnv()
	env[config.EnvAPIToken] = callerTok2
	env[config.EnvAdminToken] = adminTok
	d := loadDoc(t, baseDoc).set(t, "auth.caller_tokens", []any{"[redacted]"}).set(t, "auth.admin_token", "[redacted]")
	c := mustParse(t, d.bytes(t), env)
	assert.Equal(t, []string{callerTok2}, revealAll(c.CallerTokens()))

	d.set(t, "auth.caller_tokens_file", "/x")
	_, err := Parse(d.bytes(t), envMap(env))
	require.Error(t, err)
	assert.Equal(t, "config: auth: caller_tokens and caller_tokens_file are mutually exclusive", err.Error())
}
