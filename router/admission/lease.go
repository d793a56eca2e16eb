package admission

import "github.com/anvil-llm/anvil/router/scheduler"

// Lease is one reservation: a tier slot, and for replica tiers one member slot
// reserved together with it. The holder releases it exactly once, typically in
// one defer; further Release calls are counted as misuse and change nothing.
// A lease belongs to the tier's and the member's live state, not to a
// generation: released after a reload, it returns its slot into the same counts,
// and a member that left the configuration is counted (retiring) until its
// last lease is released.
type Lease struct {
	tier        *tierState
	member      *memberState        // nil for direct tiers
	decision    *scheduler.Decision // capacity mode only: the other strategies carry none (and allocate none)
	hasDecision bool
	released    bool // guarded by tier.mu
}

// Tier returns the tier ID ("" for a zero Lease).
func (l *Lease) Tier() string {
	if l == nil || l.tier == nil {
		return ""
	}
	return l.tier.id
}

// Member returns the reserved member ID, or "" for a direct tier (and for a
// zero Lease).
func (l *Lease) Member() string {
	if l == nil || l.tier == nil || l.member == nil {
		return ""
	}
	return l.member.id
}

// Decision returns the immutable scheduler decision that selected the member.
// It is present only for capacity-mode leases.
func (l *Lease) Decision() (scheduler.Decision, bool) {
	if l == nil || !l.hasDecision {
		return scheduler.Decision{}, false
	}
	return *l.decision, true
}

// Release returns the reservation. It reports true the first time and false on
// every later call (counted in Snapshot.ReleaseMisuse), so a lease can never be
// released twice. A nil or zero Lease reports false. Release closes the channel
// Changed handed out.
func (l *Lease) Release() bool {
	if l == nil || l.tier == nil {
		return false
	}
	t := l.tier
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.released {
		t.misuse++
		return false
	}
	l.released = true
	t.released++
	t.active--
	if m := l.member; m != nil {
		m.active--
		if m.retiring && m.active == 0 {
			t.dropRetiringLocked(m)
		}
	}
	t.wakeLocked()
	t.wakeHeadLocked()
	return true
}

// wakeLocked closes the channel Changed handed out, if any; every waiter re-checks its own question.
func (t *tierState) wakeLocked() {
	if t.wake != nil {
		close(t.wake)
		t.wake = nil
	}
}
