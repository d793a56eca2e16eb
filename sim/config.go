package sim

import (
	"fmt"
	"time"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/scenarios"
)

// callerToken is the virtual caller's bearer token: the router config requires one, and the sim
// passes it the way an operator would, through ANVIL_API_TOKEN.
const callerToken = "anvil-sim-virtual-caller"

// virtualHost is the declared host of the virtual members. No socket is ever opened on it.
const virtualHost = "127.0.0.1"

// firstPort numbers the virtual member endpoints; they only have to be unique.
const firstPort = 20000

// defaultConnectTimeout is the router's default upstream connect timeout. The config refuses a
// connect timeout above the first-byte timeout, and the sim models no connect phase, so a scenario
// with a shorter first-byte timeout gets that as its connect timeout too.
const defaultConnectTimeout = 5 * time.Second

// routerDocument is the scenario's tier under strategy as a router configuration document: the one a
// production router would load for the same tier (it marshals to that YAML, see config.Document).
// intentFile, when set, is the intent_file a restarting scenario's router persists quiesce intent to.
func routerDocument(sc *scenarios.Scenario, strategy string, ringSize int, intentFile string) config.Document {
	t := sc.Tier
	tier := config.TierDoc{
		ID: &t.ID, Kind: ptr(string(config.KindReplica)), ServedModel: &t.ServedModel, Host: ptr(virtualHost),
		Provenance:      ptr("anvil-sim virtual members (fakevllm/engine)"),
		ReplicaStrategy: &strategy,
	}
	if t.MaxConcurrency > 0 {
		tier.MaxConcurrency = &t.MaxConcurrency
	}
	tier.PassiveHealth = passiveHealth(t.PassiveHealth)
	if q := t.Queue; q != nil {
		tier.Queue = &config.QueueDoc{MaxWaiting: &q.MaxWaiting, Timeout: &q.Timeout}
	}
	if g := t.Gates; g.MaxContextTokens > 0 || g.MaxOutputTokens > 0 {
		tier.Gates = &config.GatesDoc{}
		if g.MaxContextTokens > 0 {
			tier.Gates.MaxContextTokens = &g.MaxContextTokens
		}
		if g.MaxOutputTokens > 0 {
			tier.Gates.MaxOutputTokens = &g.MaxOutputTokens
		}
	}
	for i, m := range t.Members {
		md := config.MemberDoc{ID: &m.ID, Endpoint: ptr(fmt.Sprintf("http://%s:%d", virtualHost, firstPort+i))}
		if m.MaxConcurrency > 0 {
			md.MaxConcurrency = &m.MaxConcurrency
		}
		tier.Members = append(tier.Members, md)
	}
	ring := int64(ringSize)
	var intentPtr *string
	if intentFile != "" {
		intentPtr = &intentFile
	}
	return config.Document{
		IntentFile:  intentPtr,
		Upstream:    upstream(sc.Upstream),
		DecisionLog: &config.DecisionLogDoc{RingSize: &ring},
		Aliases:     []config.AliasDoc{{ID: &t.Alias, Tier: &t.ID}},
		Tiers:       []config.TierDoc{tier},
	}
}

func ptr[T any](v T) *T { return &v }

// passiveHealth renders the scenario's passive-health policy; zero fields keep the router's defaults.
func passiveHealth(ph *scenarios.PassiveHealth) *config.PassiveHealthDoc {
	if ph == nil {
		return nil
	}
	out := &config.PassiveHealthDoc{Enabled: ph.Enabled, MaxEjectedPercent: ph.MaxEjectedPercent}
	if ph.ConsecutiveFailures > 0 {
		out.ConsecutiveFailures = &ph.ConsecutiveFailures
	}
	if ph.BaseEjection > 0 {
		out.BaseEjection = &ph.BaseEjection
	}
	if ph.MaxEjection > 0 {
		out.MaxEjection = &ph.MaxEjection
	}
	if ph.Count429 {
		out.Count429 = &ph.Count429
	}
	return out
}

// upstream renders the scenario's upstream timeouts; nil keeps every router default.
func upstream(u scenarios.Upstream) *config.UpstreamDoc {
	if u.FirstByteTimeout == 0 && u.Timeout == 0 {
		return nil
	}
	out := &config.UpstreamDoc{}
	if fb := u.FirstByteTimeout; fb > 0 {
		out.FirstByteTimeout = ptr(fb)
		if fb < defaultConnectTimeout {
			out.ConnectTimeout = ptr(fb)
		}
	}
	if u.Timeout > 0 {
		out.Timeout = ptr(u.Timeout)
	}
	return out
}

// routerEnv is the virtual router's environment: the caller token, nothing else.
func routerEnv(key string) (string, bool) {
	if key == config.EnvAPIToken {
		return callerToken, true
	}
	return "", false
}

// buildRouterConfig validates the scenario's router configuration with the real config model.
func buildRouterConfig(sc *scenarios.Scenario, strategy string, ringSize int, intentFile string) (config.Config, error) {
	cfg, err := config.Build(routerDocument(sc, strategy, ringSize, intentFile), config.Sources{LookupEnv: routerEnv})
	if err != nil {
		return config.Config{}, fmt.Errorf("sim: scenario %s as a %s router config: %w", sc.Name, strategy, err)
	}
	return cfg, nil
}
