package load

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
)

// TestDiffLines pins the wording of the change list for the changes an operator makes most.
func TestDiffLines(t *testing.T) {
	tests := []struct {
		name string
		edit func(t *testing.T, d doc)
		want []string
	}{
		{"nothing", func(*testing.T, doc) {}, nil},
		{"member ceiling lowered", func(t *testing.T, d doc) { d.set(t, "tiers[0].members[0].max_concurrency", 2) },
			[]string{"tiers.fast.members.m0.max_concurrency: 4 -> 2"}},
		{"ceiling set where there was none", func(t *testing.T, d doc) { d.set(t, "tiers[1].members[0].max_concurrency", 3) },
			[]string{"tiers.slow.members.a.max_concurrency: unset -> 3"}},
		{"alias added and one moved", func(t *testing.T, d doc) {
			d["aliases"] = append(d["aliases"].([]any), map[string]any{"id": "gpt", "tier": "big"})
			d.set(t, "aliases[2].tier", "fast")
		}, []string{"aliases.rr.tier: slow -> fast", "aliases.gpt: added"}},
		{"member added and one removed", func(t *testing.T, d doc) {
			d.set(t, "tiers[0].members[1]", map[string]any{"id": "m2", "endpoint": "http://127.0.0.1:9003", "max_concurrency": 6})
		}, []string{"tiers.fast.members.m2: added", "tiers.fast.members.m1: removed"}},
		{"members swapped", func(t *testing.T, d doc) {
			ms := d["tiers"].([]any)[0].(map[string]any)["members"].([]any)
			ms[0], ms[1] = ms[1], ms[0]
		}, []string{"tiers.fast.members: reordered"}},
		{"tier removed", func(t *testing.T, d doc) {
			d["tiers"] = d["tiers"].([]any)[:2]
			d["aliases"] = d["aliases"].([]any)[:3]
		}, []string{"aliases.big: removed", "tiers.big: removed"}},
		{"endpoint moved, opaque", func(t *testing.T, d doc) { d.set(t, "tiers[0].members[1].endpoint", "http://127.0.0.1:9555") },
			[]string{"tiers.fast.members.m1.endpoint: changed"}},
		{"tokens rotated, opaque", func(t *testing.T, d doc) {
			d.set(t, "auth.caller_tokens", []any{callerTok2})
			d.set(t, "auth.admin_token", adminTok+"x")
		}, []string{"auth.caller_tokens: changed", "auth.admin_token: changed"}},
		{"queue added, strategy and timeout changed", func(t *testing.T, d doc) {
			d.set(t, "tiers[0].queue", map[string]any{"max_waiting": 8, "timeout": "2s"})
			d.set(t, "tiers[0].replica_strategy", "round_robin")
			d.set(t, "upstream", map[string]any{"timeout": "20m"})
		}, []string{"upstream.timeout: 10m -> 20m", "tiers.fast.replica_strategy: capacity -> round_robin", "tiers.fast.queue: added"}},
		{"tls switched on", func(t *testing.T, d doc) {
			d.set(t, "tls", map[string]any{"cert_file": "/etc/c.pem", "key_file": "/etc/k.pem"})
		}, []string{"tls: added"}},
	}
	before := mustParse(t, []byte(baseDoc), baseEnv())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := loadDoc(t, baseDoc)
			tc.edit(t, d)
			after := mustParse(t, d.bytes(t), baseEnv())
			var got []string
			for _, c := range config.Diff(before, after) {
				got = append(got, c.String())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestRestartRequired: each restart-only key refuses with its path and the fixed text; a live change
// (a ceiling, a rotated certificate file) passes.
func TestRestartRequired(t *testing.T) {
	tests := []struct {
		name, path string
		value      any
		want       string // "" = live
	}{
		{"listen", "listen", "127.0.0.1:9100", "config: listen: restart required"},
		{"metrics listener", "metrics", map[string]any{"listen": "127.0.0.1:9464"}, "config: metrics.listen: restart required"},
		{"tls on", "tls", map[string]any{"cert_file": "/c", "key_file": "/k"}, "config: tls: restart required"},
		{"intent file", "intent_file", "/var/lib/anvil/intent.json", "config: intent_file: restart required"},
		{"decision sink", "decision_log", map[string]any{"jsonl_path": "/var/log/d.jsonl"}, "config: decision_log.jsonl_path: restart required"},
		{"ring", "decision_log", map[string]any{"ring_size": 7}, "config: decision_log.ring_size: restart required"},
		{"log level", "log", map[string]any{"level": "debug"}, "config: log.level: restart required"},
		{"ceiling", "tiers[0].members[0].max_concurrency", 1, ""},
		{"readiness", "readiness", map[string]any{"interval": "5s"}, ""},
	}
	before := mustParse(t, []byte(baseDoc), baseEnv())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			after := mustParse(t, loadDoc(t, baseDoc).set(t, tc.path, tc.value).bytes(t), baseEnv())
			err := config.RestartRequired(before, after)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.ErrorIs(t, err, config.ErrRestartRequired)
			var ce *config.Error
			assert.True(t, errors.As(err, &ce))
		})
	}
	t.Run("a rotated certificate file is live", func(t *testing.T) {
		on := loadDoc(t, baseDoc).set(t, "tls", map[string]any{"cert_file": "/c", "key_file": "/k"})
		a := mustParse(t, on.bytes(t), baseEnv())
		b := mustParse(t, on.set(t, "tls", map[string]any{"cert_file": "/c2", "key_file": "/k2"}).bytes(t), baseEnv())
		assert.NoError(t, config.RestartRequired(a, b))
	})
}

// FuzzDiff: for any two accepted documents, Diff is deterministic, empty from a config to itself,
// names the same paths in both directions, is empty only when the normalized forms agree, and never
// shows a credential, an endpoint or a path.
func FuzzDiff(f *testing.F) {
	full, err := os.ReadFile(filepath.Join("testdata", "full.yaml"))
	require.NoError(f, err)
	seeds := [][]byte{[]byte(baseDoc), full}
	for _, edit := range []func(d doc){
		func(d doc) { d["listen"] = "127.0.0.1:9100" },
		func(d doc) { d["aliases"] = d["aliases"].([]any)[1:] },
		func(d doc) { d["tiers"].([]any)[0].(map[string]any)["max_concurrency"] = 7 },
	} {
		d := loadDoc(f, baseDoc)
		edit(d)
		seeds = append(seeds, d.bytes(f))
	}
	for _, a := range seeds {
		for _, b := range seeds {
			f.Add(a, b)
		}
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ca, errA := Parse(a, fuzzEnv)
		cb, errB := Parse(b, fuzzEnv)
		if errA != nil || errB != nil {
			return
		}
		assert.Empty(t, config.Diff(ca, ca))
		ab := config.Diff(ca, cb)
		assert.Equal(t, ab, config.Diff(ca, cb))
		assert.Equal(t, sortedPaths(ab), sortedPaths(config.Diff(cb, ca)))
		na, err := ca.Normalized()
		require.NoError(t, err)
		nb, err := cb.Normalized()
		require.NoError(t, err)
		assert.Equal(t, len(ab) == 0, string(na) == string(nb), "the change list disagrees with the normalized forms: %v", ab)
		// Opaque values: the fixed credentials and every URL or path (a shown value, an enum, a
		// number, a duration or a tier ID, holds neither "/" nor ":").
		secrets := []string{callerTok, callerTok2, adminTok, apiKey}
		for _, c := range []config.Config{ca, cb} {
			for _, tier := range c.Tiers() {
				secrets = append(secrets, tier.Endpoint, tier.Host, tier.ServedModel)
				for _, m := range tier.Members {
					secrets = append(secrets, m.Endpoint)
				}
			}
			secrets = append(secrets, c.TLS().CertFile, c.IntentFile(), c.DecisionLog().JSONLPath, c.Listen(), c.Metrics().Listen)
		}
		for _, ch := range ab {
			for _, s := range slices.DeleteFunc(secrets, func(s string) bool { return !strings.ContainsAny(s, "/:") && !strings.Contains(s, "SECRET") }) {
				assert.NotContains(t, ch.From+" "+ch.To, s)
			}
			assert.False(t, strings.ContainsAny(ch.Path, " \n"), "path %q", ch.Path)
		}
	})
}
