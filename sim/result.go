package sim

import (
	"time"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/ident"
)

// Result is everything one run observed, raw: sim/report turns it into statistics. It holds no
// wall-clock reading, so equal scenarios and seeds give equal Results.
type Result struct {
	Scenario string
	Strategy string // the run's strategy: round_robin or capacity
	Seed     uint64
	Epoch    time.Time     // the virtual epoch: decision record times are Epoch + offset
	Duration time.Duration // arrivals stop here; in-flight requests then finish (Tail)
	Tail     time.Duration // virtual time after Duration until the last request ended
	Events   uint64        // events processed, engine steps included

	TierID      string
	TierCeiling int64 // effective aggregate ceiling, 0 = none
	Members     []MemberResult
	Requests    []Request // in arrival order

	Invariants  Invariants
	Decisions   DecisionStats
	Telemetry   TelemetryStats
	Drains      []Drain
	Actions     []Action  // timed scenario events as applied
	Restarts    []Restart // router restarts, in order
	Reloads     []Reload  // live configuration reloads, in order
	ReloadAudit ReloadAudit
	Series      Series
	DecisionLog decisionlog.Stats
	Queue       QueueStats
	// Policy is a reference policy's own books; nil for the router's own strategies. Strategy
	// then names the policy.
	Policy *PolicyStats
}

// Request is one request's compact record: times are offsets from the epoch.
type Request struct {
	Arrival    time.Duration
	FirstToken time.Duration // -1: no token reached the client
	End        time.Duration // when the outcome was known and the lease released
	Prompt     int32         // real prompt tokens
	Output     int32         // tokens generated
	Member     int8          // index into Result.Members, -1 when none was selected
	Queued     time.Duration // time in the tier's admission queue
	Outcome    decisionlog.Outcome
	// Attempts is what the router side records (the decision record's attempts): 1 once
	// admitted. The member side counts what actually arrived (MemberResult.Received and
	// Invariants.MemberDispatches), independently.
	Attempts uint8
	Stream   bool
	Status   int16
}

// MemberResult is one member's counters over the run.
type MemberResult struct {
	ID        string
	Ceiling   int64 // router-side member ceiling, 0 = none
	Profile   string
	StepScale float64

	Selected          uint64  // admissions to this member
	PeakActive        int64   // most leases held at once
	ActiveSeconds     float64 // lease-seconds: integral of active leases over [0, Duration)
	CeilingViolations uint64
	// Received counts the requests that arrived at the member's endpoint, as the member itself
	// records them by request ID: the engine took them, an error window answered them, or the
	// dead process refused the connection (Refused counts those).
	Received         uint64
	Refused          uint64
	Outside          uint64 // outside requests its engine took (Member.OutsideRate), never the router's
	Preemptions      uint64 // engine preemptions (all engine lifetimes)
	GenerationTokens uint64
	QueueTime        engine.Histogram // vllm:request_queue_time_seconds, summed over engine lifetimes

	Scrapes [3]uint64 // completed scrapes by class: ok, failed, unknown

	// Passive health, as the router's events reported it.
	Ejections  []Ejection // in order
	Recoveries uint64
	Held       uint64 // times the cap kept the member in although its streak reached the threshold
}

// Ejection is one passive-health ejection of a member.
type Ejection struct {
	At       time.Duration // virtual time of the ejection
	Duration time.Duration
	Reason   string // health.ReasonConsecutiveFailures or health.ReasonTrialFailed
}

// Invariants are the run's T012 checks, counted at every lease change and every timed event.
type Invariants struct {
	Checks              uint64 // admission snapshots audited
	CeilingViolations   uint64 // a member or the tier above its ceiling
	ReconcileViolations uint64 // tier active != sum of member active
	ScopeViolations     uint64 // a quiesced scope admitted, or quiesce state != operator intent
	OrderViolations     uint64 // capacity evidence out of the documented score order
	// EvidenceViolations count evidence that disagrees with the sim's own books at selection: a
	// local count other than the member's held leases, an eligible member missing from the rows
	// (or an ineligible one present), or a freshness class or pressure ppm other than the sample
	// the pressure cache holds implies.
	EvidenceViolations uint64
	ReleaseMisuse      uint64 // admission's own count of releases after the first
	Acquired, Released uint64 // admission's counters at the end
	// The one-attempt boundary, counted on the member side: every request ID each member
	// received, reconciled against the router's admissions at the end of the run.
	MemberDispatches  uint64 // arrivals at member endpoints, summed over members
	Redispatched      uint64 // request IDs that arrived more than once (at one member or several)
	Undispatched      uint64 // admitted requests that reached no member
	Misrouted         uint64 // arrivals at a member other than the one admission chose
	Phantom           uint64 // arrivals of requests that were never admitted
	EndActive         int64  // tier active at the end (0 once every request ended)
	PeakTierActive    int64
	TierActiveSeconds float64 // lease-seconds over [0, Duration)
	TierCeilingHits   uint64  // admissions refused because the tier was at its ceiling
}

// Decided-by classes: which score component separated the winner from the runner-up.
const (
	DecidedOnlyEligible = iota // one eligible member
	DecidedLocal               // local ratio
	DecidedUnknown             // upstream unknown vs fresh at equal local ratio
	DecidedPressure            // upstream pressure ppm
	DecidedRotation            // rotating rank (a full tie)
	NumDecided
)

// DecidedNames are the report names of the decided-by classes.
func DecidedNames() [NumDecided]string {
	return [NumDecided]string{"only_eligible", "local", "upstream_unknown", "pressure", "rotation"}
}

// DecisionStats aggregate the admission decisions.
type DecisionStats struct {
	Admitted uint64
	// NotAdmitted by cause: quiesced scope, tier at its ceiling, no eligible member.
	Quiesced, TierFull, NoEligible uint64
	Capacity                       uint64 // decisions carrying capacity evidence
	SelectedFreshness              [4]uint64
	RowFreshness                   [4]uint64 // every evidence row
	DecidedBy                      [NumDecided]uint64
	EligibleSizes                  [ident.MaxMembers + 1]uint64
	// The spec's decisive cases: an upstream-unknown member with lower local load beat a fresh
	// one; at equal local load a fresh member beat an unknown one.
	UnknownLowerLocalWins, FreshBeatsUnknown uint64
}

// QueueStats count what the tier's admission queue did.
type QueueStats struct {
	Enqueued uint64 // requests that waited
	Timeouts uint64 // of those, refused at their deadline
	Full     uint64 // requests refused because the queue was full
	Peak     int    // most requests waiting at once
}

// TelemetryStats describe the pressure cache core as the two virtual workers drove it.
type TelemetryStats struct {
	Enabled        bool // capacity runs only: round robin never reads pressure
	Snapshots      uint64
	SnapshotErrors uint64
	Scrapes        uint64 // started
	Completed      [3]uint64
	Overdue        uint64 // completions past the 1 s budget (published as failed by the core)
	MaxPending     int    // most members with a refresh queued or running
	MaxQueued      int
	WorkerBusy     [2]time.Duration
}

// Drain is one drain watch: from the drain event until the scope had no active lease.
type Drain struct {
	Member          string // "" = the tier
	Start, End      time.Duration
	Completed       bool
	Refused         bool  // the scope was not quiesced (admission.ErrNotQuiesced)
	Aborted         bool  // readmitted before it completed
	ActiveAtStart   int64 // leases the drain waited for
	OthersActiveEnd int64 // leases outside the scope when it completed (member scope only)
	// InFlightFailed counts the requests in flight in the scope when the drain started that did
	// not end in success: a drain waits, it never cancels, so this stays 0 unless a fault hit.
	InFlightFailed int64
}

// Action is one timed scenario event as applied.
type Action struct {
	At     time.Duration
	Action string
	Member string
	Err    string // "" when admission accepted it
}

// Restart is one router restart: what it cut and what the new router restored from its intent file.
type Restart struct {
	At              time.Duration
	Cut             int64 // requests in flight that the restart ended
	RestoredTiers   int   // tier quiesce intents restored
	RestoredMembers int   // member quiesce intents restored
	Ignored         int   // valid intent entries naming nothing configured
}

// SeriesBuckets is the resolution of the lease timeline.
const SeriesBuckets = 400

// Series is the active-lease timeline over [0, Duration): per member and for the tier, the
// time-weighted mean and the peak of active leases in each of SeriesBuckets equal buckets.
type Series struct {
	Bucket     time.Duration
	MemberMean [][]float64 // [member][bucket]
	MemberPeak [][]int64
	TierMean   []float64
	TierPeak   []int64
}
