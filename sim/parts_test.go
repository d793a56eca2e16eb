package sim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/request"
	"github.com/anvil-llm/anvil/scenarios"
)

// TestParseMemoMatchesWholeBody proves the memoized halves equal the real parser's reading of the
// whole body the request stands for.
func TestParseMemoMatchesWholeBody(t *testing.T) {
	memo := newParseMemo("chat")
	for _, c := range []struct {
		prompt, output int
		stream         bool
	}{{1, 1, false}, {16, 8, true}, {512, 256, true}, {4000, 1, false}, {16, 8, false}} {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			got, err := memo.request(c.prompt, c.output, c.stream)
			require.NoError(t, err)
			body := fmt.Sprintf(`{"model":"chat","stream":%t,"max_tokens":%d,"messages":[{"role":"user","content":"%s"}]}`,
				c.stream, c.output, promptText(c.prompt*bytesPerToken))
			want, err := request.Parse(request.ChatCompletions, []byte(body))
			require.NoError(t, err)
			assert.Equal(t, want.Model, got.Model)
			assert.Equal(t, want.Stream, got.Stream)
			assert.Equal(t, want.PromptTokens, got.PromptTokens)
			assert.Equal(t, want.MaxOutput, got.MaxOutput)
			assert.Equal(t, want.Tools, got.Tools)
			assert.Equal(t, want.Media, got.Media)
			assert.GreaterOrEqual(t, got.PromptTokens, int64(c.prompt), "the router's estimate is conservative")
			again, err := memo.request(c.prompt, c.output, c.stream)
			require.NoError(t, err)
			assert.Equal(t, got, again)
		})
	}
}

func TestPromptText(t *testing.T) {
	for _, n := range []int{0, 1, 79, 80, 81, 5000} {
		assert.Len(t, promptText(n), n)
	}
}

func TestRouterConfigIsAValidRouterConfig(t *testing.T) {
	sc := lookup(t, "heterogeneous")
	for _, st := range []string{scenarios.StrategyRoundRobin, scenarios.StrategyCapacity} {
		cfg, err := buildRouterConfig(sc, st, 64, "")
		require.NoError(t, err)
		tier, ok := cfg.Alias(sc.Tier.Alias)
		require.True(t, ok)
		assert.Equal(t, config.Strategy(st), tier.Strategy)
		assert.Equal(t, config.KindReplica, tier.Kind)
		require.Len(t, tier.Members, 2)
		assert.Equal(t, int64(48), tier.Members[1].MaxConcurrency)
		assert.Equal(t, sc.Tier.ServedModel, tier.ServedModel)
		assert.Equal(t, 64, cfg.DecisionLog().RingSize)
	}
}

// TestRouterConfigLoadsAsYAML proves the sim's router configuration is one a production router would
// load: marshalled to YAML and read back through the real loader (viper and the strict gate, which
// the sim itself never links), it yields the same Config, odd served model names included.
func TestRouterConfigLoadsAsYAML(t *testing.T) {
	for _, name := range []string{"heterogeneous", "rotation", "upstream-errors", "twenty-concurrent"} {
		sc := lookup(t, name)
		sc.Tier.ServedModel = `weird:"model"#not-a-comment'q`
		for _, st := range []string{scenarios.StrategyRoundRobin, scenarios.StrategyCapacity} {
			if st == scenarios.StrategyCapacity && !slices.ContainsFunc(sc.Tier.Members, func(m scenarios.Member) bool { return m.MaxConcurrency > 0 }) {
				continue
			}
			built, err := buildRouterConfig(sc, st, 64, "")
			require.NoError(t, err)
			doc, err := yaml.Marshal(routerDocument(sc, st, Placement{RingSize: 64}))
			require.NoError(t, err)
			loaded, err := load.Parse(doc, routerEnv)
			require.NoError(t, err, "%s", doc)
			assert.Equal(t, built, loaded, "%s/%s", name, st)
			tier, _ := loaded.Tier(sc.Tier.ID)
			assert.Equal(t, sc.Tier.ServedModel, tier.ServedModel)
		}
	}
}

// TestRouterDocumentPlaced: placed on real endpoints, the scenario's router configuration is the
// simulator's own with only the members' addresses, the listen address and the provenance changed,
// and the real loader reads it back to the same Config.
func TestRouterDocumentPlaced(t *testing.T) {
	sc := lookup(t, "heterogeneous")
	eps := []string{"http://127.0.0.1:41001", "http://127.0.0.1:41002"}
	for _, st := range []string{scenarios.StrategyRoundRobin, scenarios.StrategyCapacity} {
		doc, err := RouterDocument(sc, st, Placement{Endpoints: eps, Listen: "127.0.0.1:0"})
		require.NoError(t, err)
		data, err := yaml.Marshal(doc)
		require.NoError(t, err)
		placed, err := load.Parse(data, routerEnv)
		require.NoError(t, err, "%s", data)
		assert.Equal(t, "127.0.0.1:0", placed.Listen())

		virtual, err := buildRouterConfig(sc, st, DefaultRingSize, "")
		require.NoError(t, err)
		pt, _ := placed.Tier(sc.Tier.ID)
		vt, _ := virtual.Tier(sc.Tier.ID)
		require.Len(t, pt.Members, len(vt.Members))
		for i := range pt.Members {
			assert.Equal(t, eps[i], pt.Members[i].Endpoint, "member %d", i)
			pt.Members[i].Endpoint = vt.Members[i].Endpoint
		}
		assert.Contains(t, pt.Provenance, "heterogeneous")
		pt.Provenance = vt.Provenance
		assert.Equal(t, vt, pt, "%s: nothing but the placement differs", st)
	}
}

func TestRouterDocumentRefusesBadPlacements(t *testing.T) {
	sc := lookup(t, "heterogeneous")
	cases := []struct {
		name string
		p    Placement
		msg  string
	}{
		{"too few endpoints", Placement{Endpoints: []string{"http://127.0.0.1:1"}}, "1 endpoints for 2 members"},
		{"two hosts", Placement{Endpoints: []string{"http://127.0.0.1:1", "http://127.0.0.2:2"}}, "members[1].endpoint: host must equal the tier host"},
		{"not a URL", Placement{Endpoints: []string{"127.0.0.1:1", "127.0.0.1:2"}}, "members[0].endpoint: must be an absolute http or https URL"},
		{"bad listen", Placement{Listen: "nowhere"}, "listen: must be host:port"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := RouterDocument(sc, scenarios.StrategyCapacity, c.p)
			require.ErrorIs(t, err, ErrScenario)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
}

func TestLeaseAccountSeries(t *testing.T) {
	a := newLeaseAccount(2, 4*SeriesBuckets) // one nanosecond... four per bucket
	a.change(0, 0, +1)
	a.change(8, 1, +2)
	a.change(12, 0, -1)
	var r Result
	r.Members = make([]MemberResult, 2)
	a.close(4*SeriesBuckets, &r)
	assert.Equal(t, int64(1), r.Members[0].PeakActive)
	assert.Equal(t, int64(2), r.Members[1].PeakActive)
	assert.Equal(t, int64(3), r.Invariants.PeakTierActive)
	assert.InDelta(t, 12e-9, r.Members[0].ActiveSeconds, 1e-18)
	assert.InDelta(t, 2*(4*SeriesBuckets-8)*1e-9, r.Members[1].ActiveSeconds, 1e-15)
	assert.Equal(t, 1.0, r.Series.MemberMean[0][0])
	assert.Equal(t, 0.0, r.Series.MemberMean[0][3])
	assert.Equal(t, 2.0, r.Series.MemberMean[1][2])
	assert.Equal(t, int64(3), r.Series.TierPeak[2])
	assert.Len(t, r.Series.TierMean, SeriesBuckets)
}

func TestRequestID(t *testing.T) {
	assert.Equal(t, "sim-0", requestID(0))
	assert.Equal(t, "sim-123456", requestID(123456))
}
