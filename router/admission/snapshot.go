package admission

// States reported by snapshots.
const (
	StateAdmitting = "admitting"
	StateQuiesced  = "quiesced"
)

// Snapshot is one consistent read of a tier, taken under its lock.
//
// Draining is defined from state, not from callers: it is true while the scope
// is quiesced and still has active leases (State == "quiesced" && Active > 0),
// whether or not a Drain call is currently waiting. That is what a capacity or
// status surface can check for consistency, and it stays true across a drain
// request that timed out while leases are still finishing.
type Snapshot struct {
	ID             string
	Kind           Kind
	Strategy       Strategy
	State          string // StateAdmitting or StateQuiesced
	Reason         string // "" while admitting
	Draining       bool
	Active         int64 // always the sum of Members[].Active on replica tiers
	MaxConcurrency int64 // effective ceiling, 0 = unlimited
	Acquired       uint64
	Released       uint64
	ReleaseMisuse  uint64
	Cursor         int              // next sorted member index round robin or rotation starts from
	Waiting        int              // requests in the tier's admission queue
	MaxWaiting     int              // the queue's bound, 0 = no queue
	QueueFull      uint64           // requests refused because the queue was full
	Members        []MemberSnapshot // sorted by ID, nil for direct tiers
}

// MemberSnapshot is one member's part of a Snapshot. MaxConcurrency 0 means no
// member ceiling (round robin only). Draining follows the tier's definition,
// scoped to the member's own quiesce.
type MemberSnapshot struct {
	ID             string
	State          string
	Reason         string
	Draining       bool
	Active         int64
	MaxConcurrency int64
}

// Snapshot returns one consistent read of the tier.
func (t *TierAdmission) Snapshot() Snapshot {
	var members []MemberSnapshot
	if len(t.memberIDs) > 0 {
		members = make([]MemberSnapshot, len(t.memberIDs))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range members {
		m := t.members[i]
		members[i] = MemberSnapshot{
			ID:             t.memberIDs[i],
			State:          state(m.quiesced),
			Reason:         m.reason,
			Draining:       m.quiesced && m.active > 0,
			Active:         m.active,
			MaxConcurrency: t.ceilings[i],
		}
	}
	return Snapshot{
		ID:             t.id,
		Kind:           t.kind,
		Strategy:       t.strategy,
		State:          state(t.quiesced),
		Reason:         t.reason,
		Draining:       t.quiesced && t.active > 0,
		Active:         t.active,
		MaxConcurrency: t.ceiling,
		Acquired:       t.acquired,
		Released:       t.released,
		ReleaseMisuse:  t.misuse,
		Cursor:         t.cursor,
		Waiting:        t.waiting,
		MaxWaiting:     t.maxWaiting,
		QueueFull:      t.queueFull,
		Members:        members,
	}
}

func state(quiesced bool) string {
	if quiesced {
		return StateQuiesced
	}
	return StateAdmitting
}
