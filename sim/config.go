package sim

import (
	"fmt"
	"net/url"
	"slices"
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

// Placement puts the scenario's router on real sockets: the member endpoints, in the scenario's
// member order, and the address the router listens on. The zero Placement is the simulator's own:
// virtual endpoints, no listen address, no intent file.
type Placement struct {
	Endpoints  []string // one per member; nil keeps the virtual ones
	Listen     string   // "" leaves listen out (the router's default)
	IntentFile string   // "" leaves intent_file out
	RingSize   int      // decision log ring; 0 means DefaultRingSize
}

// RouterDocument is the router configuration the simulator runs the scenario's tier under strategy
// with, placed by p: what a real router needs to run the same tier in front of real members (anvil-sim
// config prints it as YAML). It is validated with the real config model first, with the caller token
// the router reads from ANVIL_API_TOKEN.
func RouterDocument(sc *scenarios.Scenario, strategy string, p Placement) (config.Document, error) {
	if p.Endpoints != nil && len(p.Endpoints) != len(sc.Tier.Members) {
		return config.Document{}, fmt.Errorf("%w: %d endpoints for %d members", ErrScenario, len(p.Endpoints), len(sc.Tier.Members))
	}
	if p.RingSize == 0 {
		p.RingSize = DefaultRingSize
	}
	doc := routerDocument(sc, strategy, p)
	if _, err := config.Build(doc, config.Sources{LookupEnv: routerEnv}); err != nil {
		return config.Document{}, fmt.Errorf("%w: scenario %s as a %s router config: %w", ErrScenario, sc.Name, strategy, err)
	}
	return doc, nil
}

// routerDocument is the scenario's tier under strategy as a router configuration document: the one a
// production router would load for the same tier (it marshals to that YAML, see config.Document).
// The members' host is the endpoints' (virtualHost for the virtual ones).
func routerDocument(sc *scenarios.Scenario, strategy string, p Placement) config.Document {
	return generationDocument(sc, sc.Tier.Members, strategy, p)
}

// generationDocument is routerDocument with the tier's members replaced by members: one generation
// of a scenario that reloads. A virtual member's endpoint follows its position in AllMembers, so a
// member keeps its endpoint (its identity) across generations.
func generationDocument(sc *scenarios.Scenario, members []scenarios.Member, strategy string, p Placement) config.Document {
	t := sc.Tier
	t.Members = members
	endpoints := p.Endpoints
	host := virtualHost
	if endpoints == nil {
		all := sc.AllMembers()
		for _, m := range t.Members {
			i := slices.IndexFunc(all, func(o scenarios.Member) bool { return o.ID == m.ID })
			endpoints = append(endpoints, fmt.Sprintf("http://%s:%d", virtualHost, firstPort+i))
		}
	} else if u, err := url.Parse(endpoints[0]); err == nil {
		host = u.Hostname()
	}
	// The text is output (the rendered configuration), so it keeps the engine's old path: the
	// simulator's reports stay byte-identical across the engine's move to the top level.
	provenance := "anvil-sim virtual members (fakevllm/engine)"
	if p.Endpoints != nil {
		provenance = "anvil-sim config: the members of scenario " + sc.Name
	}
	tier := config.TierDoc{
		ID: &t.ID, Kind: ptr(string(config.KindReplica)), ServedModel: &t.ServedModel, Host: &host,
		Provenance: &provenance, ReplicaStrategy: &strategy,
	}
	if t.MaxConcurrency > 0 {
		tier.MaxConcurrency = &t.MaxConcurrency
	}
	if t.Engine != "" {
		tier.Engine = &t.Engine // absent otherwise: the document, and so its digest, stay as before
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
		md := config.MemberDoc{ID: &m.ID, Endpoint: &endpoints[i]}
		if m.MaxConcurrency > 0 {
			md.MaxConcurrency = &m.MaxConcurrency
		}
		tier.Members = append(tier.Members, md)
	}
	ring := int64(p.RingSize)
	doc := config.Document{
		Upstream:    upstream(sc.Upstream),
		DecisionLog: &config.DecisionLogDoc{RingSize: &ring},
		Aliases:     []config.AliasDoc{{ID: &t.Alias, Tier: &t.ID}},
		Tiers:       []config.TierDoc{tier},
	}
	if p.Listen != "" {
		doc.Listen = &p.Listen
	}
	if p.IntentFile != "" {
		doc.IntentFile = &p.IntentFile
	}
	return doc
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
	doc := routerDocument(sc, strategy, Placement{RingSize: ringSize, IntentFile: intentFile})
	cfg, err := config.Build(doc, config.Sources{LookupEnv: routerEnv})
	if err != nil {
		return config.Config{}, fmt.Errorf("sim: scenario %s as a %s router config: %w", sc.Name, strategy, err)
	}
	return cfg, nil
}

// buildGenerations validates the configuration after each of the scenario's reloads with the real
// config model, as a reload validates the new file completely before anything changes: element i
// is the configuration reload i makes the router's.
// digests[i] is generation i's digest (see digestOf), digests[len(configs)] the initial one's.
func buildGenerations(sc *scenarios.Scenario, strategy string, ringSize int, intentFile string) (configs []config.Config, digests []string, err error) {
	p := Placement{RingSize: ringSize, IntentFile: intentFile}
	for i, members := range sc.Generations()[1:] {
		doc := generationDocument(sc, members, strategy, p)
		cfg, err := config.Build(doc, config.Sources{LookupEnv: routerEnv})
		if err != nil {
			return nil, nil, fmt.Errorf("sim: scenario %s after reload %d as a %s router config: %w", sc.Name, i, strategy, err)
		}
		d, err := digestOf(doc)
		if err != nil {
			return nil, nil, err
		}
		configs, digests = append(configs, cfg), append(digests, d)
	}
	d, err := digestOf(routerDocument(sc, strategy, p))
	if err != nil {
		return nil, nil, err
	}
	return configs, append(digests, d), nil
}
