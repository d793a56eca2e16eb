package config

import (
	"fmt"
	"time"

	"github.com/anvil-llm/anvil/router/ident"
)

// Bounds of the tier graph. Members per replica tier and the member
// ceiling range are contract (spec, closed v1 contract); 256 capacity
// members is the pressure cache's registration bound, refused here so the
// router never starts with a configuration its cache would reject.
const (
	maxTiers           = 256
	maxAliases         = 1024
	maxTierConcurrency = 1000000
	maxContextTokens   = 10000000
)

// tierBuilder carries the cross-tier state: tier IDs and every endpoint
// seen so far (endpoints are unique across the whole configuration).
type tierBuilder struct {
	lookup    func(string) (string, bool)
	ids       map[string]int
	endpoints map[string]bool
}

func buildTiers(raws []TierDoc, lookup func(string) (string, bool)) ([]Tier, map[string]int, []error) {
	if len(raws) == 0 {
		return nil, nil, []error{invalid("tiers", "at least one tier is required")}
	}
	if len(raws) > maxTiers {
		return nil, nil, []error{invalidf("tiers", "at most %d tiers", maxTiers)}
	}
	var errs []error // each tier's first error: a later tier is checked against the valid ones before it
	b := tierBuilder{lookup: lookup, ids: map[string]int{}, endpoints: map[string]bool{}}
	tiers := make([]Tier, 0, len(raws))
	capacityMembers := 0
	for i, rt := range raws {
		t, err := b.tier(rt, fmt.Sprintf("tiers[%d]", i))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		b.ids[t.ID] = i
		if t.Strategy == StrategyCapacity {
			capacityMembers += len(t.Members)
		}
		tiers = append(tiers, t)
	}
	if capacityMembers > ident.MaxCapacityMembers {
		errs = append(errs, invalidf("tiers", "at most %d members across capacity tiers", ident.MaxCapacityMembers))
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return tiers, b.ids, nil
}

func (b *tierBuilder) tier(rt TierDoc, path string) (Tier, error) {
	var t Tier
	var err error
	if t.ID, err = b.tierID(rt.ID, path+".id"); err != nil {
		return Tier{}, err
	}
	if t.Kind, err = tierKind(rt.Kind, path+".kind"); err != nil {
		return Tier{}, err
	}
	if rt.ServedModel == nil {
		return Tier{}, invalid(path+".served_model", "is required")
	}
	if t.ServedModel = *rt.ServedModel; !visibleASCII(t.ServedModel, maxTextLen) {
		return Tier{}, invalid(path+".served_model", "must be 1-256 visible ASCII characters")
	}
	if t.Gates, err = buildGates(rt.Gates, path+".gates"); err != nil {
		return Tier{}, err
	}
	if t.MaxConcurrency, err = intIn(rt.MaxConcurrency, 0, 1, maxTierConcurrency, path+".max_concurrency"); err != nil {
		return Tier{}, err
	}
	if t.APIKeyEnv, t.APIKey, err = b.apiKey(rt.APIKeyEnv, path+".api_key_env"); err != nil {
		return Tier{}, err
	}
	if t.Queue, err = buildQueue(rt.Queue, path+".queue"); err != nil {
		return Tier{}, err
	}
	if t.Kind == KindDirect {
		err = b.direct(rt, path, &t)
	} else {
		err = b.replica(rt, path, &t)
	}
	return t, err
}

func (b *tierBuilder) tierID(p *string, path string) (string, error) {
	if p == nil {
		return "", invalid(path, "is required")
	}
	if !ident.ValidID(*p) {
		return "", invalid(path, idRule)
	}
	if _, dup := b.ids[*p]; dup {
		return "", invalid(path, "duplicate tier id")
	}
	return *p, nil
}

func tierKind(p *string, path string) (Kind, error) {
	if p == nil {
		return "", invalid(path, "is required")
	}
	switch k := Kind(*p); k {
	case KindDirect, KindReplica:
		return k, nil
	}
	return "", invalid(path, "must be direct or replica")
}

func buildGates(r *GatesDoc, path string) (Gates, error) {
	if r == nil {
		r = &GatesDoc{}
	}
	if r.MaxContextTokens == nil {
		return Gates{}, invalid(path+".max_context_tokens", "is required")
	}
	ctx, err := intIn(r.MaxContextTokens, 0, 1, maxContextTokens, path+".max_context_tokens")
	if err != nil {
		return Gates{}, err
	}
	out, err := intIn(r.MaxOutputTokens, ctx, 1, maxContextTokens, path+".max_output_tokens")
	if err != nil {
		return Gates{}, err
	}
	if out > ctx {
		return Gates{}, invalid(path+".max_output_tokens", "must not exceed gates.max_context_tokens")
	}
	g := Gates{MaxContextTokens: ctx, MaxOutputTokens: out}
	if r.ToolsAllowed != nil {
		g.ToolsAllowed = *r.ToolsAllowed
	}
	if r.MediaAllowed != nil {
		g.MediaAllowed = *r.MediaAllowed
	}
	return g, nil
}

// apiKey resolves the optional upstream API key from the environment
// variable the tier names. The key itself never appears in the file.
func (b *tierBuilder) apiKey(p *string, path string) (string, Secret, error) {
	if p == nil {
		return "", Secret{}, nil
	}
	name := *p
	if !envNamePattern.MatchString(name) {
		return "", Secret{}, invalid(path, envNameRule)
	}
	if name == EnvAPIToken || name == EnvAPITokens || name == EnvAdminToken || name == EnvObserverTokens {
		// Forwarding a caller or admin token upstream would leak it.
		return "", Secret{}, invalid(path, "must not name a router token variable")
	}
	v, ok := b.lookup(name)
	if !ok || v == "" {
		return "", Secret{}, invalid(path, "environment variable is not set")
	}
	if !visibleASCII(v, maxAPIKeyLen) {
		return "", Secret{}, invalid(path, "environment variable must hold 1-4096 visible ASCII characters")
	}
	return name, Secret{value: v}, nil
}

func (b *tierBuilder) direct(rt TierDoc, path string, t *Tier) error {
	for _, f := range []struct {
		set bool
		key string
	}{
		{rt.Host != nil, "host"},
		{rt.Provenance != nil, "provenance"},
		{rt.ReplicaStrategy != nil, "replica_strategy"},
		{rt.Engine != nil, "engine"},
		{rt.PassiveHealth != nil, "passive_health"},
		{len(rt.Members) > 0, "members"},
	} {
		if f.set {
			return invalid(path+"."+f.key, "only allowed on replica tiers")
		}
	}
	if rt.Endpoint == nil {
		return invalid(path+".endpoint", "is required")
	}
	ep, err := b.endpoint(*rt.Endpoint, path+".endpoint")
	t.Endpoint = ep.normalized
	return err
}

// endpoint validates a base URL and claims it: no two tiers or members
// may share an upstream.
func (b *tierBuilder) endpoint(raw, path string) (endpoint, error) {
	ep, msg := parseEndpoint(raw)
	if msg != "" {
		return endpoint{}, invalid(path, msg)
	}
	if b.endpoints[ep.normalized] {
		return endpoint{}, invalid(path, "duplicate endpoint")
	}
	b.endpoints[ep.normalized] = true
	return ep, nil
}

// Bounds of a tier's queue.
const (
	maxQueueWaiting = 100_000 // admission.MaxWaiting
	minQueueTimeout = 10 * time.Millisecond
	maxQueueTimeout = 10 * time.Minute
)

// buildQueue validates a tier's queue section: absent means no queue; present, both settings are
// required, since how long a burst may wait and how large it may grow are the operator's choice.
func buildQueue(r *QueueDoc, path string) (Queue, error) {
	if r == nil {
		return Queue{}, nil
	}
	if r.MaxWaiting == nil {
		return Queue{}, invalid(path+".max_waiting", "is required")
	}
	if r.Timeout == nil {
		return Queue{}, invalid(path+".timeout", "is required")
	}
	n, err := intIn(r.MaxWaiting, 0, 1, maxQueueWaiting, path+".max_waiting")
	if err != nil {
		return Queue{}, err
	}
	d, err := durIn(r.Timeout, 0, minQueueTimeout, maxQueueTimeout, path+".timeout")
	if err != nil {
		return Queue{}, err
	}
	return Queue{MaxWaiting: int(n), Timeout: d}, nil
}
