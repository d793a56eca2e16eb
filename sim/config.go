package sim

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

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

// The router configuration schema, as far as the sim writes it. Marshalling through yaml.v3 quotes
// every value correctly, whatever the scenario's served model name holds.
type routerDoc struct {
	Upstream    *routerUpstream   `yaml:"upstream,omitempty"`
	DecisionLog routerDecisionLog `yaml:"decision_log"`
	Aliases     []routerAlias     `yaml:"aliases"`
	Tiers       []routerTier      `yaml:"tiers"`
}

// routerUpstream holds duration strings ("2m0s"), the form the router config documents.
type routerUpstream struct {
	ConnectTimeout   string `yaml:"connect_timeout,omitempty"`
	FirstByteTimeout string `yaml:"first_byte_timeout,omitempty"`
	Timeout          string `yaml:"timeout,omitempty"`
}

// defaultConnectTimeout is the router's default upstream connect timeout. The config refuses a
// connect timeout above the first-byte timeout, and the sim models no connect phase, so a scenario
// with a shorter first-byte timeout gets that as its connect timeout too.
const defaultConnectTimeout = 5 * time.Second

type routerDecisionLog struct {
	RingSize int `yaml:"ring_size"`
}

type routerAlias struct {
	ID   string `yaml:"id"`
	Tier string `yaml:"tier"`
}

type routerTier struct {
	ID              string         `yaml:"id"`
	Kind            string         `yaml:"kind"`
	ServedModel     string         `yaml:"served_model"`
	Host            string         `yaml:"host"`
	Provenance      string         `yaml:"provenance"`
	ReplicaStrategy string         `yaml:"replica_strategy"`
	MaxConcurrency  int64          `yaml:"max_concurrency,omitempty"`
	Gates           *routerGates   `yaml:"gates,omitempty"`
	Members         []routerMember `yaml:"members"`
}

type routerGates struct {
	MaxContextTokens int64 `yaml:"max_context_tokens,omitempty"`
	MaxOutputTokens  int64 `yaml:"max_output_tokens,omitempty"`
}

type routerMember struct {
	ID             string `yaml:"id"`
	Endpoint       string `yaml:"endpoint"`
	MaxConcurrency int64  `yaml:"max_concurrency,omitempty"`
}

// RouterConfig renders the scenario's tier under strategy as a router configuration document:
// the one a production router would load for the same tier.
func RouterConfig(sc *scenarios.Scenario, strategy string, ringSize int) ([]byte, error) {
	t := sc.Tier
	rt := routerTier{
		ID: t.ID, Kind: string(config.KindReplica), ServedModel: t.ServedModel, Host: virtualHost,
		Provenance:      "anvil-sim virtual members (fakevllm/engine)",
		ReplicaStrategy: strategy, MaxConcurrency: t.MaxConcurrency,
	}
	if t.Gates.MaxContextTokens > 0 || t.Gates.MaxOutputTokens > 0 {
		rt.Gates = &routerGates{MaxContextTokens: t.Gates.MaxContextTokens, MaxOutputTokens: t.Gates.MaxOutputTokens}
	}
	for i, m := range t.Members {
		rt.Members = append(rt.Members, routerMember{
			ID: m.ID, Endpoint: fmt.Sprintf("http://%s:%d", virtualHost, firstPort+i), MaxConcurrency: m.MaxConcurrency,
		})
	}
	doc := routerDoc{
		Upstream:    upstream(sc.Upstream),
		DecisionLog: routerDecisionLog{RingSize: ringSize},
		Aliases:     []routerAlias{{ID: t.Alias, Tier: t.ID}},
		Tiers:       []routerTier{rt},
	}
	return yaml.Marshal(doc)
}

// upstream renders the scenario's upstream timeouts; nil keeps every router default.
func upstream(u scenarios.Upstream) *routerUpstream {
	if u.FirstByteTimeout == 0 && u.Timeout == 0 {
		return nil
	}
	out := &routerUpstream{}
	if fb := u.FirstByteTimeout; fb > 0 {
		out.FirstByteTimeout = fb.String()
		if fb < defaultConnectTimeout {
			out.ConnectTimeout = fb.String()
		}
	}
	if u.Timeout > 0 {
		out.Timeout = u.Timeout.String()
	}
	return out
}

// parseRouterConfig renders and validates the router configuration with the real loader.
func parseRouterConfig(sc *scenarios.Scenario, strategy string, ringSize int) (config.Config, error) {
	doc, err := RouterConfig(sc, strategy, ringSize)
	if err != nil {
		return config.Config{}, fmt.Errorf("sim: render router config: %w", err)
	}
	env := func(key string) (string, bool) {
		if key == config.EnvAPIToken {
			return callerToken, true
		}
		return "", false
	}
	cfg, err := config.Parse(doc, env)
	if err != nil {
		return config.Config{}, fmt.Errorf("sim: scenario %s as a %s router config: %w", sc.Name, strategy, err)
	}
	return cfg, nil
}
