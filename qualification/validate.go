package qualification

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/scenarios"
)

func (p *Plan) general(f *File) error {
	if !namePattern.MatchString(f.Qualification) {
		return invalid("qualification", "is required: 1-48 characters [a-z0-9-], starting alphanumeric")
	}
	p.Qualification = f.Qualification
	p.Output = f.Output
	if p.Output == "" {
		p.Output = DefaultOutput
	}
	if !printable(p.Output, maxPath) {
		return invalidf("output", "must be a directory path of 1-%d printable characters", maxPath)
	}
	p.Seed = max(f.Seed, 1)
	p.Endpoint = f.Endpoint
	if p.Endpoint == "" {
		p.Endpoint = bench.Chat.String()
	}
	if _, err := bench.ParseEndpoint(p.Endpoint); err != nil {
		return invalid("endpoint", "must be chat, completions or responses")
	}
	p.RequestTimeout = f.RequestTimeout
	if p.RequestTimeout == 0 {
		p.RequestTimeout = bench.DefaultTimeout
	}
	if p.RequestTimeout < time.Millisecond || p.RequestTimeout > bench.MaxTimeout {
		return invalid("request_timeout", "must be from 1ms to 24h")
	}
	return nil
}

func (p *Plan) router(f *File) error {
	r := f.Router
	if !validURL(r.URL) {
		return invalid("router.url", "is required: an http(s) URL with a host and no credentials, query or fragment")
	}
	if !ident.ValidAlias(r.Alias) {
		return invalid("router.alias", "is required: the alias that resolves to the tier")
	}
	p.Router = RouterPlan{URL: r.URL, Alias: r.Alias}
	var err error
	if p.Router.AdminToken, err = source("router.admin_token", r.AdminTokenEnv, r.AdminTokenFile, true); err != nil {
		return err
	}
	p.Router.CallerToken, err = source("router.caller_token", r.CallerTokenEnv, r.CallerTokenFile, true)
	return err
}

// source validates a token source: at most one of an environment variable and a file, exactly one
// when required.
func source(path, env, file string, required bool) (TokenSource, error) {
	switch {
	case env != "" && file != "":
		return TokenSource{}, invalidf(path+"_env", "and %s_file are mutually exclusive", path)
	case env == "" && file == "" && required:
		return TokenSource{}, invalidf(path+"_env", "or %s_file is required", path)
	case env != "" && !envPattern.MatchString(env):
		return TokenSource{}, invalid(path+"_env", "must be an environment variable name [A-Z_][A-Z0-9_]*")
	case file != "" && !printable(file, maxPath):
		return TokenSource{}, invalidf(path+"_file", "must be a file path of 1-%d printable characters", maxPath)
	}
	return TokenSource{Env: env, File: file}, nil
}

func (p *Plan) tier(f *File) error {
	t := f.Tier
	if !ident.ValidID(t.ID) {
		return invalid("tier.id", "is required: the replica tier's ID")
	}
	if !printable(t.ServedModel, maxText) || containsSpace(t.ServedModel) {
		return invalidf("tier.served_model", "is required: the exact model name, 1-%d printable characters without spaces", maxText)
	}
	if t.Strategy != StrategyCapacity && t.Strategy != StrategyRoundRobin {
		return invalid("tier.strategy", "is required: capacity or round_robin")
	}
	if t.MaxConcurrency < 0 || t.MaxConcurrency > maxTierCeiling {
		return invalidf("tier.max_concurrency", "must be from 1 to %d (omit it for the router's default)", maxTierCeiling)
	}
	prov := Provenance{Statement: t.Provenance.Statement, EngineVersion: t.Provenance.EngineVersion, MaxModelLen: t.Provenance.MaxModelLen}
	switch {
	case !validText(prov.Statement):
		return invalidf("tier.provenance.statement", "is required: 1-%d printable ASCII characters without leading or trailing spaces", maxText)
	case prov.EngineVersion != "" && (!printable(prov.EngineVersion, 64) || containsSpace(prov.EngineVersion)):
		return invalid("tier.provenance.engine_version", "must be 1-64 printable characters without spaces")
	case prov.MaxModelLen < 0 || prov.MaxModelLen > maxModelLen:
		return invalidf("tier.provenance.max_model_len", "must be from 1 to %d", int64(maxModelLen))
	}
	token, err := source("tier.member_token", t.MemberTokenEnv, t.MemberTokenFile, false)
	if err != nil {
		return err
	}
	p.Tier = TierPlan{ID: t.ID, ServedModel: t.ServedModel, Strategy: t.Strategy, Provenance: prov,
		MemberToken: token, MaxConcurrency: t.MaxConcurrency}
	if err := p.members(t.Members); err != nil {
		return err
	}
	p.Tier.Ceiling = t.MaxConcurrency
	if t.MaxConcurrency == 0 && t.Strategy == StrategyCapacity {
		p.Tier.Ceiling = p.memberSum()
	}
	return nil
}

func (p *Plan) members(ms []MemberDoc) error {
	if len(ms) < ident.MinMembers || len(ms) > ident.MaxMembers {
		return invalidf("tier.members", "must list %d to %d members", ident.MinMembers, ident.MaxMembers)
	}
	ids, urls := map[string]bool{}, map[string]bool{}
	for i, m := range ms {
		path := fmt.Sprintf("tier.members[%d]", i)
		switch {
		case !ident.ValidID(m.ID):
			return invalid(path+".id", "is required: the member's ID in the router's config")
		case ids[m.ID]:
			return invalid(path+".id", "appears twice")
		case !validURL(m.URL):
			return invalid(path+".url", "is required: an http(s) URL with a host and no credentials, query or fragment")
		case urls[m.URL]:
			return invalid(path+".url", "appears twice")
		case m.MaxConcurrency < ident.MinCeiling || m.MaxConcurrency > ident.MaxCeiling:
			return invalidf(path+".max_concurrency", "is required: %d to %d", ident.MinCeiling, ident.MaxCeiling)
		}
		ids[m.ID], urls[m.URL] = true, true
		p.Tier.Members = append(p.Tier.Members, Member(m))
	}
	return nil
}

func (p *Plan) memberSum() int64 {
	var sum int64
	for _, m := range p.Tier.Members {
		sum += m.MaxConcurrency
	}
	return sum
}

func (p *Plan) workload(f *File) error {
	p.Workload = f.Workload
	if err := p.Workload.Validate(); err != nil {
		return err // a *scenarios.Error naming workload.*: fixed words, no values
	}
	return nil
}

func (p *Plan) phases(f *File) error {
	ph := f.Phases
	var err error
	if p.Phases.Matched, err = load("phases.matched", ph.Matched); err != nil {
		return err
	}
	if p.Phases.Sustained, err = load("phases.sustained", ph.Sustained); err != nil {
		return err
	}
	clients := p.Tier.Ceiling
	if clients == 0 {
		clients = p.memberSum()
	}
	if clients > scenarios.MaxClients {
		return invalidf("tier", "a ceiling above %d cannot be held by the sustained phase's clients", scenarios.MaxClients)
	}
	p.Phases.SustainedClients = int(clients)
	if err := p.failure(ph.Failure); err != nil {
		return err
	}
	p.Phases.SampleEvery = cmpOr(ph.SampleEvery, DefaultSampleEvery)
	if p.Phases.SampleEvery < 10*time.Millisecond || p.Phases.SampleEvery > time.Minute {
		return invalid("phases.sample_every", "must be from 10ms to 1m")
	}
	p.Phases.RestoreTimeout = cmpOr(ph.RestoreTimeout, DefaultRestoreTimeout)
	if p.Phases.RestoreTimeout < time.Second || p.Phases.RestoreTimeout > time.Hour {
		return invalid("phases.restore_timeout", "must be from 1s to 1h")
	}
	// Every load phase must be a plan the bench accepts.
	for _, ph := range []struct {
		path string
		bp   bench.Plan
	}{
		{"phases.matched", p.matchedPlan()}, {"phases.sustained", p.sustainedPlan()}, {"phases.failure", p.failurePlan()},
	} {
		if err := ph.bp.Validate(); err != nil {
			return invalid(ph.path, "is not a load the bench can send (check its size against the workload)")
		}
	}
	return nil
}

func load(path string, l LoadDoc) (Load, error) {
	switch {
	case l.Requests < 0 || l.Requests > bench.MaxRequests:
		return Load{}, invalidf(path+".requests", "must be from 1 to %d", bench.MaxRequests)
	case (l.Requests == 0) == (l.Duration == 0):
		return Load{}, invalid(path, "needs exactly one of requests and duration")
	case l.Duration != 0 && (l.Duration < time.Second || l.Duration > bench.MaxDuration):
		return Load{}, invalid(path+".duration", "must be from 1s to 24h")
	case l.Warmup < 0 || l.Warmup > bench.MaxWarmup:
		return Load{}, invalidf(path+".warmup", "must be from 0 to %d", bench.MaxWarmup)
	}
	return Load(l), nil
}

func (p *Plan) failure(f FailureDoc) error {
	fp := Failure{Member: f.Member, Duration: f.Duration, Hold: cmpOr(f.Hold, DefaultHold), DrainWait: cmpOr(f.DrainWait, DefaultDrainWait)}
	if fp.Member == "" {
		fp.Member = p.Tier.Members[0].ID
	}
	switch {
	case !slices.ContainsFunc(p.Tier.Members, func(m Member) bool { return m.ID == fp.Member }):
		return invalid("phases.failure.member", "must be one of the tier's members")
	case fp.Duration < time.Second || fp.Duration > bench.MaxDuration:
		return invalid("phases.failure.duration", "is required: the most the load may last (it ends when the member is readmitted), 1s to 24h")
	case fp.Hold < 10*time.Millisecond || fp.Hold > time.Hour:
		return invalid("phases.failure.hold", "must be from 10ms to 1h")
	case fp.DrainWait < time.Second || fp.DrainWait > manage.MaxWaitSeconds*time.Second || fp.DrainWait%time.Second != 0:
		return invalidf("phases.failure.drain_wait", "must be whole seconds from 1s to %ds", manage.MaxWaitSeconds)
	}
	p.Phases.Failure = fp
	return nil
}

func (p *Plan) slo(f *File) error {
	s := f.SLO
	if s.MinSuccess == nil || !(*s.MinSuccess >= 0 && *s.MinSuccess <= 1) {
		return invalid("slo.min_success", "is required: the share of measured routed requests that must succeed, 0 to 1")
	}
	for _, d := range []struct {
		path string
		v    time.Duration
	}{{"slo.ttft_p99", s.TTFTP99}, {"slo.tpot_p99", s.TPOTP99}, {"slo.e2el_p99", s.E2ELP99}, {"slo.max_added_e2el_p50", s.MaxAddedE2ELP50}} {
		if d.v < 0 || d.v > 24*time.Hour {
			return invalid(d.path, "must be from 0 (not checked) to 24h")
		}
	}
	p.SLO = SLOPlan{MinSuccess: *s.MinSuccess, TTFTP99: s.TTFTP99, TPOTP99: s.TPOTP99, E2ELP99: s.E2ELP99,
		MaxAddedE2ELP50: s.MaxAddedE2ELP50}
	return nil
}

func (p *Plan) approval(f *File) error {
	if d := f.Approval.Digest; d != "" && !validDigest(d) {
		return invalid("approval.digest", "must be "+digestPrefix+" and 64 lowercase hex digits (anvil-qualify digest prints it)")
	}
	p.Approval = f.Approval.Digest
	return nil
}

// validURL: an http(s) URL with a host and no credentials, query, fragment or opaque part.
func validURL(raw string) bool {
	if raw == "" || len(raw) > maxPath {
		return false
	}
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		u.RawQuery == "" && u.Fragment == "" && u.Opaque == "" && !u.ForceQuery
}

// printable: 1-max bytes of printable ASCII.
func printable(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// validText is the router config's rule for declared text: printable ASCII, no leading or trailing
// space.
func validText(s string) bool {
	return printable(s, maxText) && s[0] != ' ' && s[len(s)-1] != ' '
}

func containsSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return true
		}
	}
	return false
}
