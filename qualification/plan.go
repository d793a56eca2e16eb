package qualification

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/scenarios"
)

// PlanFormat names a resolved plan's format.
const PlanFormat = "anvil-qualify-plan/1"

// Defaults applied by Parse.
const (
	DefaultOutput         = "qualification-runs"
	DefaultHold           = time.Second
	DefaultDrainWait      = time.Duration(manage.DefaultWaitSeconds) * time.Second
	DefaultSampleEvery    = time.Second
	DefaultRestoreTimeout = 2 * time.Minute
	// QuiesceReason is the reason of every quiesce a run makes: the router's audit log and the
	// transition answers name the qualification as its author.
	QuiesceReason = "qualification"
)

// Bounds of a qualification file.
const (
	maxTierCeiling = 1_000_000 // the router config's tier max_concurrency bound
	maxText        = 256
	maxPath        = 4096
	maxModelLen    = 1 << 31
)

// Strategies of a replica tier, as the router names them.
const (
	StrategyCapacity   = "capacity"
	StrategyRoundRobin = "round_robin"
)

var (
	namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,47}$`) // room for a phase suffix in bench labels
	envPattern  = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,127}$`)
)

// Plan is a validated qualification file with its defaults applied: what a run does, and nothing
// secret. Its JSON is the run's resolved plan; its Fingerprint binds the operator's approval.
type Plan struct {
	Format         string             `json:"format"`
	Qualification  string             `json:"qualification"`
	Output         string             `json:"output"`
	Seed           uint64             `json:"seed"`
	Endpoint       string             `json:"endpoint"`
	RequestTimeout time.Duration      `json:"request_timeout_ns"`
	Router         RouterPlan         `json:"router"`
	Tier           TierPlan           `json:"tier"`
	Workload       scenarios.Workload `json:"workload"`
	Phases         PhasesPlan         `json:"phases"`
	SLO            SLOPlan            `json:"slo"`
	// Approval is the recorded approval digest ("" when none): never part of the resolved plan's
	// JSON, so no artifact carries it.
	Approval string `json:"-"`
}

// TokenSource is where a token is read at run time: an environment variable or a file.
type TokenSource struct {
	Env  string `json:"env,omitempty"`
	File string `json:"file,omitempty"`
}

// Set reports whether a source is named.
func (s TokenSource) Set() bool { return s.Env != "" || s.File != "" }

// RouterPlan is the router: its URL, the alias of the tier and its token sources.
type RouterPlan struct {
	URL         string      `json:"url"`
	Alias       string      `json:"alias"`
	AdminToken  TokenSource `json:"admin_token"`
	CallerToken TokenSource `json:"caller_token"`
}

// TierPlan is the declared tier.
type TierPlan struct {
	ID          string      `json:"id"`
	ServedModel string      `json:"served_model"`
	Strategy    string      `json:"strategy"`
	Provenance  Provenance  `json:"provenance"`
	MemberToken TokenSource `json:"member_token"`
	Members     []Member    `json:"members"`
	// MaxConcurrency is the declared tier ceiling (0 = none declared); Ceiling is the one the router
	// must enforce: the declared one, or for the capacity strategy the sum of member ceilings.
	MaxConcurrency int64 `json:"max_concurrency"`
	Ceiling        int64 `json:"effective_ceiling"`
}

// Provenance is the declared replica provenance.
type Provenance struct {
	Statement     string `json:"statement"`
	EngineVersion string `json:"engine_version,omitempty"`
	MaxModelLen   int64  `json:"max_model_len,omitempty"`
}

// Member is one declared member.
type Member struct {
	ID             string `json:"id"`
	URL            string `json:"url"`
	MaxConcurrency int64  `json:"max_concurrency"`
}

// PhasesPlan sizes the load phases.
type PhasesPlan struct {
	Matched   Load    `json:"matched"`
	Sustained Load    `json:"sustained"`
	Failure   Failure `json:"failure"`
	// SustainedClients is the closed loop of the sustained and failure phases: the tier's ceiling.
	SustainedClients int           `json:"sustained_clients"`
	SampleEvery      time.Duration `json:"sample_every_ns"`
	RestoreTimeout   time.Duration `json:"restore_timeout_ns"`
}

// Load is one phase's size.
type Load struct {
	Requests int           `json:"requests,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	Warmup   int           `json:"warmup,omitempty"`
}

// Failure is the failure-injection phase.
type Failure struct {
	Member    string        `json:"member"`
	Duration  time.Duration `json:"duration_ns"` // the most the load may last: it ends when the member is readmitted
	Hold      time.Duration `json:"hold_ns"`
	DrainWait time.Duration `json:"drain_wait_ns"`
}

// SLOPlan are the gate's targets; zero latency targets are not checked.
type SLOPlan struct {
	MinSuccess      float64       `json:"min_success"`
	TTFTP99         time.Duration `json:"ttft_p99_ns,omitempty"`
	TPOTP99         time.Duration `json:"tpot_p99_ns,omitempty"`
	E2ELP99         time.Duration `json:"e2el_p99_ns,omitempty"`
	MaxAddedE2ELP50 time.Duration `json:"max_added_e2el_p50_ns,omitempty"`
}

// Parse decodes and validates a qualification file and applies its defaults. Its errors are
// *Error values wrapping ErrInvalid that name the path and never echo the file.
func Parse(data []byte) (*Plan, error) {
	f, err := decode(data)
	if err != nil {
		return nil, err
	}
	p := &Plan{Format: PlanFormat}
	for _, step := range []func(*File) error{p.general, p.router, p.tier, p.workload, p.phases, p.slo, p.approval} {
		if err := step(&f); err != nil {
			return nil, err
		}
	}
	return p, nil
}

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

// Fingerprint is the SHA-256 of the resolved plan's canonical JSON, "sha256:" and 64 hex digits.
// Any change to what a run would do changes it, which voids the approval recorded for it.
func (p *Plan) Fingerprint() string {
	sum := sha256.Sum256(p.JSON())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// JSON is the resolved plan's canonical bytes (no approval digest, no token).
func (p *Plan) JSON() []byte {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // strings, numbers and structs of them always marshal
	}
	return b
}

// basePlan is the bench plan every load phase shares: the seed, workload, endpoint, timeout and
// the gate's latency targets as goodput SLOs.
func (p *Plan) basePlan(label string) bench.Plan {
	ep, _ := bench.ParseEndpoint(p.Endpoint)
	return bench.Plan{Label: label, Scenario: "", Seed: p.Seed, Workload: p.Workload, Endpoint: ep, IgnoreEOS: true,
		Timeout: p.RequestTimeout, SLO: bench.SLO{TTFT: p.SLO.TTFTP99, TPOT: p.SLO.TPOTP99, E2EL: p.SLO.E2ELP99}}
}

// matchedPlan is the schedule the baseline sends to the members and the routed phase through the
// router: the same arrivals, shapes and seed.
func (p *Plan) matchedPlan() bench.Plan {
	bp := p.basePlan(p.Qualification)
	bp.Requests, bp.Duration, bp.Warmup = p.Phases.Matched.Requests, p.Phases.Matched.Duration, p.Phases.Matched.Warmup
	return bp
}

// closedAtCeiling is the workload's shapes sent by a closed loop of the tier's ceiling in clients.
func (p *Plan) closedAtCeiling(label string) bench.Plan {
	bp := p.basePlan(label)
	w := bp.Workload
	w.Open, w.Closed = nil, &scenarios.Closed{Clients: p.Phases.SustainedClients, Backoff: scenarios.DefaultBackoff}
	if c := p.Workload.Closed; c != nil {
		w.Closed.Backoff = c.Backoff
	}
	bp.Workload = w
	return bp
}

func (p *Plan) sustainedPlan() bench.Plan {
	bp := p.closedAtCeiling(p.Qualification + "-sustained")
	bp.Requests, bp.Duration, bp.Warmup = p.Phases.Sustained.Requests, p.Phases.Sustained.Duration, p.Phases.Sustained.Warmup
	return bp
}

// failurePlan drops the workload's client cancellations: this phase proves that the router cuts no
// request, so every request it sends is meant to run to its end.
func (p *Plan) failurePlan() bench.Plan {
	bp := p.closedAtCeiling(p.Qualification + "-failure")
	bp.Duration = p.Phases.Failure.Duration
	bp.Workload.Cancel = nil
	return bp
}

func cmpOr(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
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
