package load

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
)

// rolesDoc is baseDoc with observer tokens and labelled callers from each kind of source.
func rolesDoc(t *testing.T) doc {
	d := loadDoc(t, baseDoc)
	d.set(t, "auth.observer_tokens", []any{observerTok})
	d.set(t, "auth.callers", []any{
		map[string]any{"label": "team-a", "token_file": "/run/secrets/team-a"},
		map[string]any{"label": "team-b", "token_env": "TEAM_B_TOKEN"},
		map[string]any{"label": "batch.nightly", "token": labelTok2},
	})
	return d
}

func rolesSources(env map[string]string) config.Sources {
	e := baseEnv()
	e["TEAM_B_TOKEN"] = labelTok
	for k, v := range env {
		e[k] = v
	}
	return config.Sources{LookupEnv: envMap(e), ReadFile: func(name string) ([]byte, error) {
		switch name {
		case "/run/secrets/team-a":
			return []byte("# team a\n" + callerTok2 + "\n"), nil
		case "/run/secrets/observers":
			return []byte(observerTok + "\n"), nil
		}
		return nil, fs.ErrNotExist
	}}
}

// TestRolesResolve: the unlabelled tokens come first, then auth.callers in order with their labels;
// observer tokens are their own list; CallerTokens is Callers' tokens.
func TestRolesResolve(t *testing.T) {
	c, err := ParseWith(rolesDoc(t).bytes(t), rolesSources(nil))
	require.NoError(t, err)
	got := c.Callers()
	require.Len(t, got, 4)
	for i, want := range []struct{ label, token string }{{"", callerTok}, {"team-a", callerTok2}, {"team-b", labelTok}, {"batch.nightly", labelTok2}} {
		assert.Equal(t, want.label, got[i].Label)
		assert.True(t, got[i].Token.Matches(want.token), "caller %d", i)
		assert.True(t, c.CallerTokens()[i].Matches(want.token))
	}
	require.Len(t, c.ObserverTokens(), 1)
	assert.True(t, c.ObserverTokens()[0].Matches(observerTok))
	assert.Contains(t, c.String(), "caller_tokens=4 observer_tokens=1 admin_token=true")

	n, err := c.Normalized()
	require.NoError(t, err)
	for _, line := range []string{"observer_tokens: # from inline", "- label: team-a\n      token_file: /run/secrets/team-a\n",
		"- label: team-b\n      token_env: TEAM_B_TOKEN\n", "- label: batch.nightly\n      token: '[redacted]'\n"} {
		assert.Contains(t, string(n), line)
	}
	for _, secret := range []string{callerTok, callerTok2, labelTok, labelTok2, observerTok, adminTok} {
		assert.NotContains(t, string(n), secret)
		assert.NotContains(t, c.String(), secret)
	}
}

// TestObserverTokensPrecedence: ANVIL_OBSERVER_TOKENS replaces the file's observer tokens (the
// token file is then not read), as ANVIL_API_TOKENS does for caller tokens; without it the file wins
// over nothing, and no observer token at all is valid.
func TestObserverTokensPrecedence(t *testing.T) {
	d := rolesDoc(t)
	d.del(t, "auth.observer_tokens")
	d.set(t, "auth.observer_tokens_file", "/run/secrets/observers")
	c, err := ParseWith(d.bytes(t), rolesSources(nil))
	require.NoError(t, err)
	require.Len(t, c.ObserverTokens(), 1)
	assert.True(t, c.ObserverTokens()[0].Matches(observerTok))

	d.set(t, "auth.observer_tokens_file", "/nowhere")
	env := map[string]string{config.EnvObserverTokens: "observer-env-SECRET-1111111 , observer-env-SECRET-2222222"}
	c, err = ParseWith(d.bytes(t), rolesSources(env))
	require.NoError(t, err, "the environment wins; the missing file is not read")
	require.Len(t, c.ObserverTokens(), 2)
	assert.True(t, c.ObserverTokens()[1].Matches("observer-env-SECRET-2222222"))

	d.del(t, "auth.observer_tokens_file")
	c, err = ParseWith(d.bytes(t), rolesSources(nil))
	require.NoError(t, err)
	assert.Empty(t, c.ObserverTokens())

	// ANVIL_API_TOKENS replaces the unlabelled caller tokens only: auth.callers still apply.
	c, err = ParseWith(d.bytes(t), rolesSources(map[string]string{config.EnvAPITokens: "caller-env-SECRET-33333333"}))
	require.NoError(t, err)
	require.Len(t, c.Callers(), 4)
	assert.True(t, c.Callers()[0].Token.Matches("caller-env-SECRET-33333333"))
	assert.Equal(t, "team-a", c.Callers()[1].Label)
}

// TestRolesDiffAndReload: Diff names every role key that changed, opaquely, and none of them needs a
// restart (a live reload rotates them).
func TestRolesDiffAndReload(t *testing.T) {
	before, err := ParseWith(rolesDoc(t).bytes(t), rolesSources(nil))
	require.NoError(t, err)
	d := rolesDoc(t)
	d.set(t, "auth.observer_tokens", []any{observerTok + "x"})
	d.set(t, "auth.callers", []any{
		map[string]any{"label": "team-a", "token": callerTok2},
		map[string]any{"label": "team-b", "token_env": "TEAM_B_TOKEN"},
		map[string]any{"label": "team-c", "token": labelTok2},
	})
	after, err := ParseWith(d.bytes(t), rolesSources(nil))
	require.NoError(t, err)
	var lines []string
	for _, c := range config.Diff(before, after) {
		lines = append(lines, c.String())
	}
	assert.Equal(t, []string{"auth.observer_tokens: changed", "auth.callers.team-a.token_file: removed",
		"auth.callers.team-c: added", "auth.callers.batch.nightly: removed"}, lines)
	assert.NoError(t, config.RestartRequired(before, after))

	d.set(t, "auth.callers[1].token_env", "TEAM_C_TOKEN")
	after, err = ParseWith(d.bytes(t), rolesSources(map[string]string{"TEAM_C_TOKEN": "label-SECRET-rotated-hhhhhhh"}))
	require.NoError(t, err)
	var changed []string
	for _, c := range config.Diff(before, after) {
		if strings.HasPrefix(c.Path, "auth.callers.team-b") {
			changed = append(changed, c.String())
		}
	}
	assert.Equal(t, []string{"auth.callers.team-b.token_env: changed", "auth.callers.team-b.token: changed"}, changed)
	assert.NoError(t, config.RestartRequired(before, after))
}
