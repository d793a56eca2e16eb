package scenarios

import "time"

// Scenario is one validated simulation: a replica tier, a workload, telemetry behaviour, timed
// events, a duration, a seed and the gates its report must pass. Obtain one from Parse, Lookup or
// All; they apply defaults and validate every field, so a Scenario's fields are always usable as
// they are. The YAML keys are the yaml tags below.
type Scenario struct {
	Name        string        `yaml:"name"`        // 1-64 chars [a-z0-9-]
	Description string        `yaml:"description"` // free text, optional
	Seed        uint64        `yaml:"seed"`        // default 1
	Duration    time.Duration `yaml:"duration"`    // virtual run length, 1s-24h
	// Strategies lists the runs: the same arrivals and seed under each strategy, side by side.
	// Default: the tier's own strategy only.
	Strategies []string  `yaml:"strategies"`
	Tier       Tier      `yaml:"tier"`
	Upstream   Upstream  `yaml:"upstream"`
	Workload   Workload  `yaml:"workload"`
	Telemetry  Telemetry `yaml:"telemetry"`
	Events     []Event   `yaml:"events"`
	// Reloads are live configuration changes, in time order: the router swaps to the next
	// generation of its configuration at each one without a restart (see Reload).
	Reloads []Reload `yaml:"reloads"`
	SLO     SLO      `yaml:"slo"`
	// Windows name spans of the run whose arrivals the report measures on their own
	// (window.NAME.tier.success_rate, window.NAME.member.ID.share, ...), for gates on one phase.
	Windows []Window `yaml:"windows"`
	Expect  []Gate   `yaml:"expect"`
}

// Window is a named span [From, Until) of arrival times.
type Window struct {
	Name  string        `yaml:"name"` // 1-64 chars [a-z0-9-]
	From  time.Duration `yaml:"from"`
	Until time.Duration `yaml:"until"` // default: end of run
}

// Strategy names, as the router config spells them.
const (
	StrategyRoundRobin = "round_robin"
	StrategyCapacity   = "capacity"
)

// Tier is the replica tier under test. It becomes a real router configuration.
type Tier struct {
	ID          string `yaml:"id"`           // default "pool"
	Alias       string `yaml:"alias"`        // the model name callers send; default "chat"
	ServedModel string `yaml:"served_model"` // default "sim/llama-3.1-8b"
	Strategy    string `yaml:"strategy"`     // round_robin or capacity (required)
	// Engine is the router's tiers[].engine: which serving engine's page the virtual members print
	// and which adapter reads it (absent: vllm, rendered as absent). The router's config model
	// validates it when the scenario is loaded.
	Engine         string         `yaml:"engine"`
	MaxConcurrency int64          `yaml:"max_concurrency"`
	Gates          Gates          `yaml:"gates"`
	PassiveHealth  *PassiveHealth `yaml:"passive_health"` // absent: the router's defaults, enabled
	Queue          *Queue         `yaml:"queue"`          // absent: no admission queue
	Members        []Member       `yaml:"members"`        // 2-16
}

// Queue is the tier's admission queue, rendered into the router configuration's tiers[].queue; the
// router's config model validates it when the scenario is loaded.
type Queue struct {
	MaxWaiting int64         `yaml:"max_waiting"`
	Timeout    time.Duration `yaml:"timeout"`
}

// PassiveHealth is the tier's passive-health policy, rendered into the router configuration's
// tiers[].passive_health; zero fields keep the router's defaults, and the router's config model
// validates the result when the scenario is loaded.
type PassiveHealth struct {
	Enabled             *bool         `yaml:"enabled"`
	ConsecutiveFailures int64         `yaml:"consecutive_failures"`
	BaseEjection        time.Duration `yaml:"base_ejection"`
	MaxEjection         time.Duration `yaml:"max_ejection"`
	MaxEjectedPercent   *int64        `yaml:"max_ejected_percent"`
	Count429            bool          `yaml:"count_429"`
}

// Gates are the tier's request-wide limits. MaxContextTokens defaults to the smallest member
// profile's max_model_len; MaxOutputTokens 0 means the context bound.
type Gates struct {
	MaxContextTokens int64 `yaml:"max_context_tokens"`
	MaxOutputTokens  int64 `yaml:"max_output_tokens"`
}

// Upstream are the router's upstream timeouts, rendered into the router configuration's upstream
// section; zero keeps the router's default (first byte 2m, whole attempt 10m). The router's own
// bounds apply (1s-1h and 1s-24h, first byte not above the whole): the real config loader checks
// them when the scenario is loaded.
type Upstream struct {
	FirstByteTimeout time.Duration `yaml:"first_byte_timeout"` // until the first response byte
	Timeout          time.Duration `yaml:"timeout"`            // the whole attempt, streaming included
}

// Member is one virtual vLLM replica.
type Member struct {
	ID             string  `yaml:"id"`
	MaxConcurrency int64   `yaml:"max_concurrency"` // router-side ceiling; required in capacity mode
	Profile        string  `yaml:"profile"`         // engine profile name; default "8b-h100"
	StepScale      float64 `yaml:"step_scale"`      // step-time multiplier, 2 = half as fast; default 1
	// OutsideRate is load the router cannot see: requests per second (Poisson, the workload's
	// shapes) that other clients send straight to the member's engine. The member's telemetry
	// counts them; the router holds no lease for them. Default 0; at most MaxOutsideRate.
	OutsideRate float64 `yaml:"outside_rate"`
}

// Workload says who sends what. Exactly one of Closed and Open is set.
type Workload struct {
	Closed       *Closed  `yaml:"closed"`
	Open         *Open    `yaml:"open"`
	PromptTokens Dist     `yaml:"prompt_tokens"`
	OutputTokens Dist     `yaml:"output_tokens"`
	Streaming    *float64 `yaml:"streaming"` // share of streamed requests 0-1; default 1
	Cancel       *Cancel  `yaml:"cancel"`    // optional client cancellations
}

// Closed is a closed loop: N clients, each sending its next request when the previous one ends.
type Closed struct {
	Clients int           `yaml:"clients"` // 1-100000
	Think   time.Duration `yaml:"think"`   // pause after a completed request; default 0
	// Backoff is the pause after a refused or failed request; default 250ms. It must be positive so
	// a refused client cannot spin within one instant. A request the router refuses for want of
	// capacity (503 with Retry-After) waits the Retry-After instead, as OpenAI's SDKs do.
	Backoff time.Duration `yaml:"backoff"`
}

// Arrival processes of an open loop.
const (
	ProcessPoisson  = "poisson"
	ProcessGamma    = "gamma"
	ProcessConstant = "constant"
)

// Open is an open loop: arrivals at Rate per second, whatever the system does.
type Open struct {
	Process string  `yaml:"process"` // poisson, gamma or constant
	Rate    float64 `yaml:"rate"`    // mean arrivals per second, > 0
	// Shape is the gamma shape k of the inter-arrival times (gamma only): the coefficient of
	// variation is 1/sqrt(k), so k < 1 makes bursts and k = 1 is Poisson.
	Shape float64 `yaml:"shape"`
}

// Distribution kinds of Dist.
const (
	DistConstant  = "constant"
	DistUniform   = "uniform"
	DistLognormal = "lognormal"
	DistNormal    = "normal"
)

// Dist is a token-count distribution. Every kind is clamped to [Min, Max] (constant excepted).
type Dist struct {
	Dist   string  `yaml:"dist"`
	Value  float64 `yaml:"value"`  // constant
	Min    float64 `yaml:"min"`    // uniform, lognormal, normal: lower clamp (>= 1)
	Max    float64 `yaml:"max"`    // upper clamp
	Median float64 `yaml:"median"` // lognormal
	Sigma  float64 `yaml:"sigma"`  // lognormal: standard deviation of the log
	Mean   float64 `yaml:"mean"`   // normal
	StdDev float64 `yaml:"stddev"` // normal
}

// Cancel makes a share of clients give up after a uniform delay since dispatch.
type Cancel struct {
	Share    float64       `yaml:"share"` // 0-1
	AfterMin time.Duration `yaml:"after_min"`
	AfterMax time.Duration `yaml:"after_max"`
}

// Telemetry is how the members' /metrics behave towards the pressure cache's two workers.
type Telemetry struct {
	ScrapeLatency time.Duration    `yaml:"scrape_latency"` // default 5ms
	ScrapeJitter  time.Duration    `yaml:"scrape_jitter"`  // extra uniform 0..jitter; default 0
	Faults        []TelemetryFault `yaml:"faults"`
}

// Telemetry fault modes.
const (
	// ModeOutage: the scrape fails (connection refused or HTTP 5xx) after the scrape latency: failed.
	ModeOutage = "outage"
	// ModeSlow: the page takes Latency; past the 1 s fetch timeout the worker gives up: failed.
	ModeSlow = "slow"
	// ModeMalformed: the page arrives but does not parse: unknown.
	ModeMalformed = "malformed"
	// ModeHung: the body trickles for Latency and holds the worker that long (a socket timeout is
	// not a hard cancel); the core still projects failed after 1 s.
	ModeHung = "hung"
)

// TelemetryFault changes one member's /metrics behaviour for [From, Until).
type TelemetryFault struct {
	Member  string        `yaml:"member"`
	From    time.Duration `yaml:"from"`
	Until   time.Duration `yaml:"until"`   // default: end of run
	Mode    string        `yaml:"mode"`    // outage, slow, malformed or hung
	Latency time.Duration `yaml:"latency"` // slow and hung: how long one scrape takes
}

// Event actions.
const (
	ActionQuiesce     = "quiesce"      // stop admitting to the member or tier
	ActionDrain       = "drain"        // watch the quiesced scope until its active leases reach 0
	ActionReadmit     = "readmit"      // admit again (member and tier scopes are independent)
	ActionKill        = "kill"         // the member's engine dies: in-flight requests fail, health fails
	ActionRevive      = "revive"       // a killed member comes back with an empty engine
	ActionSlow        = "slow"         // multiply the member's step time by Factor (1 restores)
	ActionErrors      = "errors"       // a share of dispatches answer HTTP Status until Until
	ActionStreamClose = "stream_close" // a share of responses are cut after a delay until Until
	// ActionRestart restarts the router: requests in flight are cut as a dying process cuts them,
	// and the new router restores the quiesce intent the run persisted to its intent file. It
	// applies to the whole router (no member). After reloads the new router loads the
	// configuration in force, as a restarted process reads the file as it is.
	ActionRestart = "restart"
)

// Event is one timed action. Member "" means the tier scope (quiesce, drain, readmit) or every
// member (errors, stream_close).
type Event struct {
	At       time.Duration `yaml:"at"`
	Action   string        `yaml:"action"`
	Member   string        `yaml:"member"`
	Reason   string        `yaml:"reason"` // quiesce reason code; default "sim-maintenance"
	Factor   float64       `yaml:"factor"` // slow
	Rate     float64       `yaml:"rate"`   // errors, stream_close: share 0-1
	Status   int           `yaml:"status"` // errors: HTTP status 400-599; default 500
	Until    time.Duration `yaml:"until"`  // errors, stream_close: end of the window; default end of run
	AfterMin time.Duration `yaml:"after_min"`
	AfterMax time.Duration `yaml:"after_max"` // stream_close: cut between these delays after dispatch
}

// Reload is one live configuration reload at virtual time At: the tier's configuration with every
// change applied, in order, becomes the router's next generation in one step. At least one change;
// after the last one the tier has 2-16 members. A timed event at the same instant as a reload
// happens before it, and names the members configured before it.
type Reload struct {
	At      time.Duration `yaml:"at"` // within (0, duration), after the previous reload's
	Changes []Change      `yaml:"changes"`
}

// Change is one change of a reload: exactly one of its fields is set.
type Change struct {
	// MemberCeiling sets a configured member's max_concurrency. Lowered below the member's active
	// leases, it cuts nothing: new admissions to the member wait until it is under the new ceiling.
	MemberCeiling *MemberCeiling `yaml:"member_ceiling"`
	// AddMember configures a new member with a fresh virtual engine. It is unready, so it admits
	// nothing, until its first readiness probe after the reload passes.
	AddMember *AddMember `yaml:"add_member"`
	// RemoveMember unconfigures a member: it admits nothing from the reload on, and the requests
	// in flight on it finish there.
	RemoveMember *RemoveMember `yaml:"remove_member"`
}

// MemberCeiling is a member_ceiling change.
type MemberCeiling struct {
	Tier           string `yaml:"tier"`            // default the scenario's tier; no other tier exists
	Member         string `yaml:"member"`          // a member configured at the reload
	MaxConcurrency int64  `yaml:"max_concurrency"` // 1-100000
}

// AddMember is an add_member change: the new member's fields, as in tier.members.
type AddMember struct {
	Tier           string  `yaml:"tier"`            // default the scenario's tier
	ID             string  `yaml:"id"`              // a member ID the scenario has not used before
	MaxConcurrency int64   `yaml:"max_concurrency"` // 1-100000
	Profile        string  `yaml:"profile"`         // engine profile name; default "8b-h100"
	StepScale      float64 `yaml:"step_scale"`      // default 1
}

// Member is the added member as a tier member.
func (a AddMember) Member() Member {
	return Member{ID: a.ID, MaxConcurrency: a.MaxConcurrency, Profile: a.Profile, StepScale: a.StepScale}
}

// RemoveMember is a remove_member change.
type RemoveMember struct {
	Tier   string `yaml:"tier"`   // default the scenario's tier
	Member string `yaml:"member"` // a member configured at the reload
}

// SLO are the goodput targets; zero fields are not checked.
type SLO struct {
	TTFT time.Duration `yaml:"ttft"`
	TPOT time.Duration `yaml:"tpot"`
	E2E  time.Duration `yaml:"e2e"`
}

// Gate comparison operators.
var gateOps = []string{"==", "!=", "<", "<=", ">", ">="}

// Gate is one expectation on a report metric: metric OP value. With Vs set, the compared value is
// the ratio metric(Run) / metric(Vs).
type Gate struct {
	Name   string  `yaml:"name"`   // optional label; default the expression
	Metric string  `yaml:"metric"` // a report metric name, e.g. "tier.ceiling_violations"
	Run    string  `yaml:"run"`    // which strategy's run; default the first
	Vs     string  `yaml:"vs"`     // optional: divide by the same metric of this run
	Op     string  `yaml:"op"`
	Value  float64 `yaml:"value"`
}
