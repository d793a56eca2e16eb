package admission

import (
	"github.com/anvil-llm/anvil/router/ident"
)

// Quiesce stops new admissions to the whole tier (every member) with a reason
// code. In-flight leases are untouched. Quiescing again replaces the reason.
func (t *TierAdmission) Quiesce(reason string) error {
	if !ident.ValidReason(reason) {
		return ErrInvalidReason
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.quiesced, t.reason = true, reason
	t.wakeLocked()
	t.wakeAllLocked() // every waiter retries, is refused as quiesced and leaves the queue
	return nil
}

// QuiesceMember stops new admissions to one member of a replica tier. Other
// members and the tier state are untouched.
func (t *TierAdmission) QuiesceMember(member, reason string) error {
	if !ident.ValidReason(reason) {
		if _, err := t.member(member); err != nil {
			return err
		}
		return ErrInvalidReason
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m, err := t.memberLocked(member)
	if err != nil {
		return err
	}
	m.quiesced, m.reason = true, reason
	t.wakeLocked()
	t.wakeHeadLocked()
	return nil
}

// Readmit lifts the tier quiesce. It never clears member quiesce.
func (t *TierAdmission) Readmit() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.quiesced, t.reason = false, ""
	t.wakeLocked()
	t.wakeHeadLocked()
	return nil
}

// ReadmitMember lifts one member's quiesce. It never clears the tier quiesce.
func (t *TierAdmission) ReadmitMember(member string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, err := t.memberLocked(member)
	if err != nil {
		return err
	}
	m.quiesced, m.reason = false, ""
	t.wakeLocked()
	t.wakeHeadLocked()
	return nil
}

// Idle answers the drain question for one scope without waiting: member "" is the whole tier,
// otherwise that member of a replica tier. It returns ErrNotQuiesced when the scope itself is not
// quiesced (a member drain needs the member quiesced: a tier quiesce does not count), else whether the
// scope holds no lease. A drain never cancels a lease: the caller waits for Changed and asks again.
func (t *TierAdmission) Idle(member string) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	quiesced, active := t.quiesced, t.active
	if member != "" {
		m, err := t.memberLocked(member)
		if err != nil {
			return false, err
		}
		quiesced, active = m.quiesced, m.active
	}
	if !quiesced {
		return false, ErrNotQuiesced
	}
	return active == 0, nil
}

// Changed returns a channel that is closed at the tier's next change of leases or admission state: a
// release, a quiesce or a readmission. Take it before asking Idle (or trying to acquire), then wait on
// it, so that no change between the question and the wait is missed. Waiting is the caller's: the
// admission core never blocks.
func (t *TierAdmission) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.wake == nil {
		t.wake = make(chan struct{})
	}
	return t.wake
}

// memberLocked finds a configured member of the tier in force by ID.
func (t *TierAdmission) memberLocked(member string) (*memberState, error) {
	if t.cur.kind != KindReplica {
		return nil, errNotReplica
	}
	i, ok := t.cur.index[member]
	if !ok {
		return nil, ErrUnknownMember
	}
	return t.members[i], nil
}

// member is memberLocked under the lock.
func (t *TierAdmission) member(member string) (*memberState, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.memberLocked(member)
}
