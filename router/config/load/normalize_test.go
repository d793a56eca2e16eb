package load

import (
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func fullEnv() map[string]string {
	return map[string]string{"GPU_BOX_KEY": "gpu-SECRET-key", "HOSTED_API_KEY": apiKey, "TEAM_A_TOKEN": labelTok, "BATCH_TOKEN": labelTok2}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// TestNormalizedGolden pins the normalized form of a document using every
// key: canonical hosts and endpoints, durations, defaults, redaction.
func TestNormalizedGolden(t *testing.T) {
	c := mustParse(t, readTestdata(t, "full.yaml"), fullEnv())
	got, err := c.Normalized()
	require.NoError(t, err)
	golden := filepath.Join("testdata", "full.normalized.yaml")
	if *update {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}

func TestFullAccessors(t *testing.T) {
	c := mustParse(t, readTestdata(t, "full.yaml"), fullEnv())
	assert.Equal(t, "[::1]:8443", c.Listen())
	assert.Equal(t, config.TLS{CertFile: "/etc/anvil/tls/cert.pem", KeyFile: "/etc/anvil/tls/key.pem"}, c.TLS())
	assert.Equal(t, config.Limits{MaxBodyBytes: 2 << 20, MaxInflightBodyBytes: 32 << 20, MaxAudioBytes: 50 << 20, MaxSpillBytes: 2 << 30,
		CallerBodySharePercent: 50, MinUploadBytesPerSecond: 8 << 10, MinUploadGrace: 30 * time.Second}, c.Limits())
	assert.Equal(t, config.Upstream{ConnectTimeout: 2 * time.Second, FirstByteTimeout: 90 * time.Second, Timeout: 90 * time.Minute, MaxResponseBytes: 16 << 20}, c.Upstream())
	assert.Equal(t, 45*time.Second, c.ShutdownGrace())
	assert.Equal(t, config.Log{Format: "json", Level: "debug"}, c.Log())
	assert.Equal(t, config.DecisionLog{RingSize: 4096, JSONLPath: "/var/log/anvil/decisions.jsonl", MaxLineBytes: 8192, UnreadyAfter: 2 * time.Minute}, c.DecisionLog())
	assert.Equal(t, "/var/lib/anvil/intent.json", c.IntentFile())
	assert.Equal(t, config.Readiness{Interval: 1500 * time.Millisecond, Timeout: 500 * time.Millisecond}, c.Readiness())
	assert.Equal(t, []config.Alias{{ID: "chat", Tier: "gpu-box"}, {ID: "meta-llama/llama-3.1-8b-instruct", Tier: "gpu-box"}, {ID: "big", Tier: "hosted"}}, c.Aliases())

	gpu, ok := c.Alias("chat")
	require.True(t, ok)
	assert.Equal(t, "gpu-SECRET-key", gpu.APIKey.Reveal())
	assert.Equal(t, config.Tier{
		ID: "gpu-box", Kind: config.KindReplica, ServedModel: "meta-llama/Llama-3.1-8B-Instruct",
		Gates:          config.Gates{MaxContextTokens: 8192, MaxOutputTokens: 2048, ToolsAllowed: true},
		MaxConcurrency: 48, APIKeyEnv: "GPU_BOX_KEY", APIKey: gpu.APIKey,
		Host: "gpu-box.example.net", Provenance: "vllm 0.12.0, weights sha256:0123abcd, one H100",
		Strategy: config.StrategyCapacity, Engine: "vllm",
		Queue: config.Queue{MaxWaiting: 24, Timeout: 2 * time.Second},
		PassiveHealth: config.PassiveHealth{Enabled: true, ConsecutiveFailures: 3, BaseEjection: 5 * time.Second,
			MaxEjection: 2 * time.Minute, MaxEjectedPercent: 25, Count429: true},
		Members: []config.Member{
			{ID: "vllm-0", Endpoint: "http://gpu-box.example.net:8001", MaxConcurrency: 32},
			{ID: "vllm-1", Endpoint: "http://gpu-box.example.net:8002", MaxConcurrency: 32},
		},
	}, gpu)
	rr, ok := c.Tier("rr-box")
	require.True(t, ok)
	assert.Equal(t, "::1", rr.Host)
	assert.Equal(t, config.StrategyRoundRobin, rr.Strategy, "round robin is the default strategy")
	assert.Equal(t, "sglang", rr.Engine, "the engine as set")
	assert.Equal(t, config.PassiveHealth{Enabled: false, ConsecutiveFailures: 5, BaseEjection: 10 * time.Second,
		MaxEjection: 5 * time.Minute, MaxEjectedPercent: 50}, rr.PassiveHealth, "disabled, the rest defaulted")
	assert.Equal(t, []config.Member{{ID: "a", Endpoint: "http://[::1]:9001"}, {ID: "b", Endpoint: "http://[::1]:9002", MaxConcurrency: 8}}, rr.Members)
	hosted, ok := c.Alias("big")
	require.True(t, ok)
	assert.Equal(t, "https://api.example.com/v1", hosted.Endpoint)
	assert.Equal(t, config.Strategy(""), hosted.Strategy)
	assert.Empty(t, hosted.Engine, "a direct tier has no engine")
	assert.Nil(t, hosted.Members)

	_, ok = c.Alias("Chat")
	assert.False(t, ok, "alias lookup is exact")
	_, ok = c.Tier("nope")
	assert.False(t, ok)
	m, ok := gpu.Member("vllm-1")
	assert.True(t, ok)
	assert.Equal(t, int64(32), m.MaxConcurrency)
	_, ok = gpu.Member("vllm-9")
	assert.False(t, ok)
}

func TestDefaults(t *testing.T) {
	c := mustParse(t, loadDoc(t, baseDoc).del(t, "listen").bytes(t), baseEnv())
	assert.Equal(t, config.DefaultListen, c.Listen())
	assert.False(t, c.TLS().Enabled())
	assert.Equal(t, int64(1<<20), c.Limits().MaxBodyBytes)
	assert.Equal(t, config.Upstream{ConnectTimeout: 5 * time.Second, FirstByteTimeout: 2 * time.Minute, Timeout: 10 * time.Minute, MaxResponseBytes: 32 << 20}, c.Upstream())
	assert.Equal(t, 30*time.Second, c.ShutdownGrace())
	assert.Equal(t, config.Log{Format: "text", Level: "info"}, c.Log())
	assert.Equal(t, config.DecisionLog{RingSize: 1024, MaxLineBytes: 8192}, c.DecisionLog())
	assert.Empty(t, c.IntentFile())
	assert.Equal(t, config.Readiness{Interval: 2 * time.Second, Timeout: time.Second}, c.Readiness())
	slow, _ := c.Tier("slow")
	assert.Equal(t, config.Gates{MaxContextTokens: 4096, MaxOutputTokens: 4096}, slow.Gates, "output defaults to context, tools and media off")
}

func TestEffectiveMaxConcurrency(t *testing.T) {
	cases := []struct {
		name string
		tier config.Tier
		want int64
	}{
		{"direct unlimited", config.Tier{Kind: config.KindDirect}, 0},
		{"direct set", config.Tier{Kind: config.KindDirect, MaxConcurrency: 7}, 7},
		{"rr unlimited even with member ceilings", config.Tier{Kind: config.KindReplica, Strategy: config.StrategyRoundRobin, Members: []config.Member{{MaxConcurrency: 2}, {MaxConcurrency: 3}}}, 0},
		{"rr set", config.Tier{Kind: config.KindReplica, Strategy: config.StrategyRoundRobin, MaxConcurrency: 4}, 4},
		{"capacity sums members", config.Tier{Kind: config.KindReplica, Strategy: config.StrategyCapacity, Members: []config.Member{{MaxConcurrency: 2}, {MaxConcurrency: 3}}}, 5},
		{"capacity sixteen members not multiplied", config.Tier{Kind: config.KindReplica, Strategy: config.StrategyCapacity, Members: make16(100000)}, 1600000},
		{"capacity explicit below sum", config.Tier{Kind: config.KindReplica, Strategy: config.StrategyCapacity, MaxConcurrency: 3, Members: []config.Member{{MaxConcurrency: 2}, {MaxConcurrency: 3}}}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.tier.EffectiveMaxConcurrency())
		})
	}
	c := mustParse(t, []byte(baseDoc), baseEnv())
	fast, _ := c.Tier("fast")
	assert.Equal(t, int64(10), fast.EffectiveMaxConcurrency(), "capacity tier without max_concurrency: 4+6")
	assert.Equal(t, int64(0), fast.MaxConcurrency)
	c = mustParse(t, loadDoc(t, baseDoc).set(t, "tiers[0].max_concurrency", 10).bytes(t), baseEnv())
	fast, _ = c.Tier("fast")
	assert.Equal(t, int64(10), fast.EffectiveMaxConcurrency(), "equal to the sum is allowed")
}

func make16(ceiling int64) []config.Member {
	out := make([]config.Member, 16)
	for i := range out {
		out[i].MaxConcurrency = ceiling
	}
	return out
}

// TestImmutable: nothing a caller receives aliases the config.Config's state.
func TestImmutable(t *testing.T) {
	c := mustParse(t, []byte(baseDoc), baseEnv())
	tiers := c.Tiers()
	tiers[0].ID = "changed"
	tiers[0].Members[0].MaxConcurrency = 99
	tiers[0].Members = append(tiers[0].Members, config.Member{ID: "extra"})
	fast, ok := c.Tier("fast")
	require.True(t, ok)
	fast.Members[1].ID = "changed"
	aliased, _ := c.Alias("chat")
	aliased.Members[0].Endpoint = "changed"
	aliases := c.Aliases()
	aliases[0].Tier = "changed"
	toks := c.CallerTokens()
	toks[0] = config.Secret{}

	again, _ := c.Tier("fast")
	assert.Equal(t, []config.Member{
		{ID: "m0", Endpoint: "http://127.0.0.1:9001", MaxConcurrency: 4},
		{ID: "m1", Endpoint: "http://127.0.0.1:9002", MaxConcurrency: 6},
	}, again.Members)
	assert.Equal(t, "fast", c.Tiers()[0].ID)
	assert.Equal(t, "fast", c.Aliases()[0].Tier)
	assert.Equal(t, callerTok, c.CallerTokens()[0].Reveal())
}

// TestNormalizedRoundTrip: the normalized form parses again (credentials
// from the environment) and normalizes to the same bytes.
func TestNormalizedRoundTrip(t *testing.T) {
	for _, name := range []string{"full.yaml", "minimal.yaml"} {
		t.Run(name, func(t *testing.T) {
			env := fullEnv()
			env[config.EnvAPITokens] = callerTok + "," + callerTok2
			env[config.EnvAdminToken] = adminTok
			env[config.EnvObserverTokens] = observerTok
			c := mustParse(t, readTestdata(t, name), env)
			n1, err := c.Normalized()
			require.NoError(t, err)
			c2 := mustParse(t, n1, env)
			n2, err := c2.Normalized()
			require.NoError(t, err)
			assert.Equal(t, string(n1), string(n2))
			assert.Equal(t, c.Tiers(), c2.Tiers())
		})
	}
}

func TestSlogLevel(t *testing.T) {
	for level, want := range map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		c := mustParse(t, loadDoc(t, baseDoc).set(t, "log.level", level).bytes(t), baseEnv())
		assert.Equal(t, want, c.Log().SlogLevel(), level)
	}
}
