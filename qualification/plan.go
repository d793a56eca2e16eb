package qualification

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"time"

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
	// Calibration is the ceiling sweep, nil when the file plans none (the resolved plan of a file
	// without one is unchanged, and so is its fingerprint).
	Calibration *Calibration `json:"calibration,omitempty"`
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
	for _, step := range []func(*File) error{p.general, p.router, p.tier, p.workload, p.phases, p.slo, p.calibrationStep, p.approval} {
		if err := step(&f); err != nil {
			return nil, err
		}
	}
	return p, nil
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
