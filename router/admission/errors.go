package admission

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers branch with errors.Is; the wrapped messages add a
// fixed detail and never echo unvalidated input.
var (
	// ErrInvalidSpec refuses a tier specification passed to New.
	ErrInvalidSpec = errors.New("admission: invalid tier specification")
	// ErrUnknownTier reports a tier ID that is not configured in the Set.
	ErrUnknownTier = errors.New("admission: unknown tier")
	// ErrUnknownMember reports a member ID that is not configured in the tier.
	ErrUnknownMember = errors.New("admission: unknown member")
	// ErrWrongKind reports a direct-tier call on a replica tier or the reverse.
	ErrWrongKind = errors.New("admission: operation does not apply to this tier kind")
	// ErrQuiesced refuses an acquire because the tier (or every member) is quiesced.
	ErrQuiesced = errors.New("admission: quiesced")
	// ErrExhausted refuses an acquire because a ceiling is reached or no member is eligible.
	ErrExhausted = errors.New("admission: capacity exhausted")
	// ErrInvalidSnapshot refuses malformed readiness or pressure mappings.
	ErrInvalidSnapshot = errors.New("admission: invalid member snapshot")
	// ErrNotQuiesced refuses a drain whose scope is not quiesced (or was readmitted while draining).
	ErrNotQuiesced = errors.New("admission: scope is not quiesced")
	// ErrInvalidReason refuses a reason code outside the reason grammar.
	ErrInvalidReason = errors.New("admission: invalid reason code")
	// ErrNoQueue refuses Enqueue on a tier without a queue.
	ErrNoQueue = errors.New("admission: the tier has no queue")
	// ErrQueueFull refuses Enqueue when the tier's queue holds its max_waiting requests.
	ErrQueueFull = errors.New("admission: queue full")
	// ErrQueueAhead refuses an acquire that would overtake requests waiting in the tier's queue: a
	// request without a ticket queues behind them (or is refused like ErrExhausted when it cannot).
	ErrQueueAhead = errors.New("admission: requests are queued ahead")
	// ErrSuperseded refuses an admission (or an enqueue) through a generation a reconfiguration
	// replaced: nothing was reserved, and the caller retries through the generation in force.
	ErrSuperseded = errors.New("admission: the configuration generation was superseded")
	// ErrStale refuses a Commit whose base generation was already superseded, or a second Commit.
	ErrStale = errors.New("admission: the reconfiguration is stale")
)

// Detailed refusals, built once so the acquire path never formats under the lock.
var (
	errTierQuiesced       = fmt.Errorf("%w: tier quiesced", ErrQuiesced)
	errMembersQuiesced    = fmt.Errorf("%w: every member quiesced", ErrQuiesced)
	errTierFull           = fmt.Errorf("%w: tier at its ceiling", ErrExhausted)
	errNoEligible         = fmt.Errorf("%w: no eligible member", ErrExhausted)
	errNotDirect          = fmt.Errorf("%w: Acquire needs a direct tier, use AcquireMember", ErrWrongKind)
	errNotReplica         = fmt.Errorf("%w: member operations need a replica tier", ErrWrongKind)
	errIncompleteReady    = fmt.Errorf("%w: readiness must cover exactly the configured members", ErrInvalidSnapshot)
	errIncompletePressure = fmt.Errorf("%w: pressure must be absent or cover exactly the configured members", ErrInvalidSnapshot)
	errUnknownTrial       = fmt.Errorf("%w: trial may name only configured members", ErrInvalidSnapshot)
	errNoQueue            = ErrNoQueue
	errQueueFull          = fmt.Errorf("%w: %w", ErrExhausted, ErrQueueFull)
	errQueueAhead         = fmt.Errorf("%w: %w", ErrExhausted, ErrQueueAhead)
	errTicketGone         = errors.New("admission: the ticket is not waiting in this tier's queue")
	errSuperseded         = ErrSuperseded
)
