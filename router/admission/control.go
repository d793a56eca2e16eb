package admission

import (
	"context"
	"fmt"

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
	return nil
}

// QuiesceMember stops new admissions to one member of a replica tier. Other
// members and the tier state are untouched.
func (t *TierAdmission) QuiesceMember(member, reason string) error {
	i, err := t.memberIndex(member)
	if err != nil {
		return err
	}
	if !ident.ValidReason(reason) {
		return ErrInvalidReason
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.members[i].quiesced, t.members[i].reason = true, reason
	return nil
}

// Readmit lifts the tier quiesce. It never clears member quiesce. A Drain of
// the tier still waiting returns ErrNotQuiesced.
func (t *TierAdmission) Readmit() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.quiesced, t.reason = false, ""
	t.wakeLocked()
	return nil
}

// ReadmitMember lifts one member's quiesce. It never clears the tier quiesce.
// A DrainMember of that member still waiting returns ErrNotQuiesced.
func (t *TierAdmission) ReadmitMember(member string) error {
	i, err := t.memberIndex(member)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.members[i].quiesced, t.members[i].reason = false, ""
	t.wakeLocked()
	return nil
}

// Drain waits until the tier has no active lease. The tier must be quiesced
// (ErrNotQuiesced otherwise, also when it is readmitted while Drain waits).
// Drain never cancels in-flight leases; it returns the context's error, wrapped,
// if ctx ends first. An idle quiesced tier drains at once, even with a done ctx.
func (t *TierAdmission) Drain(ctx context.Context) error {
	return t.drain(ctx, -1)
}

// DrainMember waits until one member has no active lease. The member itself
// must be quiesced (a tier quiesce does not count: the scope is the member).
func (t *TierAdmission) DrainMember(ctx context.Context, member string) error {
	i, err := t.memberIndex(member)
	if err != nil {
		return err
	}
	return t.drain(ctx, i)
}

// drain waits for scope i (-1 = tier) to become idle. It never waits holding
// the lock: it takes the current wake channel and waits on it outside.
func (t *TierAdmission) drain(ctx context.Context, i int) error {
	if ctx == nil {
		return errNilContext
	}
	waited := false
	for {
		wake, err := t.drainStep(i, waited)
		if wake == nil {
			return err
		}
		waited = true
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("admission: drain of tier %q interrupted: %w", t.id, ctx.Err())
		}
	}
}

// drainStep checks scope i under the lock. It returns (nil, nil) when the scope
// is idle, (nil, err) when it is not quiesced, else the channel to wait on.
func (t *TierAdmission) drainStep(i int, waited bool) (<-chan struct{}, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	quiesced, active := t.quiesced, t.active
	if i >= 0 {
		quiesced, active = t.members[i].quiesced, t.members[i].active
	}
	switch {
	case !quiesced && waited:
		return nil, errReadmitted
	case !quiesced:
		return nil, ErrNotQuiesced
	case active == 0:
		return nil, nil
	}
	if t.wake == nil {
		t.wake = make(chan struct{})
	}
	return t.wake, nil
}

func (t *TierAdmission) memberIndex(member string) (int, error) {
	if t.kind != KindReplica {
		return -1, errNotReplica
	}
	i, ok := t.index[member]
	if !ok {
		return -1, ErrUnknownMember
	}
	return i, nil
}
