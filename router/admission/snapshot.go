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
	ID       string
	Kind     Kind
	Strategy Strategy
	State    string // StateAdmitting or StateQuiesced
	Reason   string // "" while admitting
	Draining bool
	// Retiring is true for a tier a reload removed while it still held leases or waiters: it admits
	// nothing and leaves every view when it is idle.
	Retiring       bool
	Active         int64 // always the sum of Members[].Active on replica tiers (retiring members included)
	MaxConcurrency int64 // effective ceiling, 0 = unlimited
	Acquired       uint64
	Released       uint64
	ReleaseMisuse  uint64
	Cursor         int              // next sorted member index round robin or rotation starts from
	Waiting        int              // requests in the tier's admission queue
	MaxWaiting     int              // the queue's bound, 0 = no queue
	QueueFull      uint64           // requests refused because the queue was full
	Members        []MemberSnapshot // configured members sorted by ID, then retiring ones; nil for direct tiers
}

// MemberSnapshot is one member's part of a Snapshot. MaxConcurrency 0 means no
// member ceiling (round robin only, and every retiring member). Draining follows the tier's definition,
// scoped to the member's own quiesce. Active may exceed MaxConcurrency after a reload lowered the
// ceiling: nothing is cut, new admissions wait until the count is under it.
type MemberSnapshot struct {
	ID             string
	State          string
	Reason         string
	Draining       bool
	Retiring       bool // left the configuration; still holds leases (its ID may repeat a configured member whose endpoint changed)
	Active         int64
	MaxConcurrency int64
}

// Snapshot returns one consistent read of the tier in force (whatever the view's generation):
// its configured members sorted by ID, then the retiring ones (members that left the
// configuration and still hold leases), so Active is always the sum of Members[].Active.
func (t *TierAdmission) Snapshot() Snapshot { return t.tierState.snapshot() }

func (t *tierState) snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.cur
	var members []MemberSnapshot
	if n := len(t.members) + len(t.retiring); n > 0 {
		members = make([]MemberSnapshot, 0, n)
	}
	for i, m := range t.members {
		members = append(members, m.snapshot(c.ceilings[i]))
	}
	for _, m := range t.retiring {
		members = append(members, m.snapshot(0))
	}
	return Snapshot{
		ID:             t.id,
		Kind:           c.kind,
		Strategy:       c.strategy,
		State:          state(t.quiesced),
		Reason:         t.reason,
		Draining:       t.quiesced && t.active > 0,
		Retiring:       t.retired,
		Active:         t.active,
		MaxConcurrency: c.ceiling,
		Acquired:       t.acquired,
		Released:       t.released,
		ReleaseMisuse:  t.misuse,
		Cursor:         t.cursor,
		Waiting:        t.waiting,
		MaxWaiting:     c.maxWaiting,
		QueueFull:      t.queueFull,
		Members:        members,
	}
}

func (m *memberState) snapshot(ceiling int64) MemberSnapshot {
	return MemberSnapshot{
		ID:             m.id,
		State:          state(m.quiesced),
		Reason:         m.reason,
		Draining:       m.quiesced && m.active > 0,
		Retiring:       m.retiring,
		Active:         m.active,
		MaxConcurrency: ceiling,
	}
}

func state(quiesced bool) string {
	if quiesced {
		return StateQuiesced
	}
	return StateAdmitting
}
