package admission

import (
	"errors"
	"fmt"
	"sync"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// TierAdmission is one generation's view of one tier: the tier's configuration as that generation
// holds it (immutable) over the tier's live state (tierState: counts, quiesce, members, cursor,
// queue), which every generation that keeps the tier shares. Admission through a view whose
// configuration is no longer the one in force is refused with ErrSuperseded, under the tier lock,
// so no lease is ever granted against a ceiling or a membership that a reload replaced. Reads
// (Snapshot, Idle, Changed) and transitions (Quiesce, Readmit) act on the live state whatever the
// view. Use it through a Set.
type TierAdmission struct {
	*tierState
	conf *tierConf
}

// tierConf is one generation's configuration of a tier. It is immutable once built.
type tierConf struct {
	kind       Kind
	strategy   Strategy
	ceiling    int64          // effective tier ceiling, 0 = unlimited
	memberIDs  []string       // sorted configured membership
	keys       []string       // member identity (ID and endpoint) by sorted index
	ceilings   []int64        // member ceilings by sorted index, 0 = none
	index      map[string]int // member ID -> sorted index
	maxWaiting int            // the queue's bound; 0 means no queue
}

// tierState is the live state of one tier, kept across generations by tier ID. See the package
// documentation for the lock discipline.
type tierState struct {
	id string

	mu       sync.Mutex
	cur      *tierConf // the configuration in force
	retired  bool      // the tier left the configuration; it stays visible until idle
	quiesced bool
	reason   string
	active   int64
	acquired uint64
	released uint64
	misuse   uint64
	cursor   int
	members  []*memberState // by cur's sorted index
	retiring []*memberState // members that left the configuration and still hold leases
	wake     chan struct{}  // handed out by Changed, closed at the next change; nil when nobody waits

	// The queue (queue.go).
	queue     []*Ticket // FIFO; tickets that left stay until they reach the front
	waiting   int       // tickets in queue that have not left
	nextSeq   uint64
	queueFull uint64 // Enqueue refusals for a full queue
}

// memberState is one member's live state, kept across generations by its identity: the member ID
// and its endpoint.
type memberState struct {
	id, key  string
	quiesced bool
	reason   string
	active   int64
	retiring bool // left the configuration; counted until its last lease is released
}

func newConf(spec TierSpec) *tierConf {
	ms := sortedMembers(spec.Members)
	c := &tierConf{
		kind:       spec.Kind,
		strategy:   spec.Strategy,
		ceiling:    spec.MaxConcurrency,
		index:      make(map[string]int, len(ms)),
		maxWaiting: spec.MaxWaiting,
	}
	var sum int64
	for i, m := range ms {
		c.memberIDs = append(c.memberIDs, m.ID)
		c.keys = append(c.keys, memberKey(m))
		c.ceilings = append(c.ceilings, m.MaxConcurrency)
		c.index[m.ID] = i
		sum += m.MaxConcurrency
	}
	if c.strategy == StrategyCapacity && c.ceiling == 0 {
		c.ceiling = sum // the default aggregate ceiling, never multiplied
	}
	return c
}

// memberKey is a member's identity: its ID and its endpoint. A member whose endpoint changed is a
// new member.
func memberKey(m MemberSpec) string { return m.ID + "\x00" + m.Endpoint }

func newTier(spec TierSpec) *TierAdmission {
	c := newConf(spec)
	s := &tierState{id: spec.ID, cur: c, members: make([]*memberState, len(c.memberIDs))}
	for i, id := range c.memberIDs {
		s.members[i] = &memberState{id: id, key: c.keys[i]}
	}
	return &TierAdmission{tierState: s, conf: c}
}

// supersededLocked reports whether the view's configuration is no longer the one in force.
func (t *TierAdmission) supersededLocked() bool { return t.retired || t.cur != t.conf }

// superseded is supersededLocked for callers outside the lock.
func (t *TierAdmission) superseded() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.supersededLocked()
}

// ID returns the tier ID.
func (t *TierAdmission) ID() string { return t.id }

// Kind returns the tier kind, as this view's generation configures it.
func (t *TierAdmission) Kind() Kind { return t.conf.kind }

// Strategy returns the replica strategy (StrategyRoundRobin for direct tiers), as this view's
// generation configures it.
func (t *TierAdmission) Strategy() Strategy { return t.conf.strategy }

// Members returns the configured member IDs of this view's generation, sorted (nil for direct
// tiers).
func (t *TierAdmission) Members() []string {
	if len(t.conf.memberIDs) == 0 {
		return nil
	}
	return append([]string(nil), t.conf.memberIDs...)
}

// Acquire reserves one slot of a direct tier without waiting. It fails with
// ErrWrongKind on replica tiers, ErrQuiesced while the tier is quiesced,
// ErrExhausted at the tier ceiling and ErrSuperseded when a reload replaced this
// view's generation; a failed Acquire reserves nothing.
func (t *TierAdmission) Acquire() (*Lease, error) {
	if t.conf.kind != KindDirect {
		return nil, errNotDirect
	}
	return t.acquire(nil, nil)
}

// AcquireMember selects and reserves one member of a replica tier without
// waiting. ready maps every configured member ID to its eligibility as the caller
// knows it (served-model readiness, and passive health); pressure maps every
// configured member ID to normalized upstream pressure, or is nil, meaning every
// member's upstream pressure is unknown (pressure is validated but otherwise
// ignored in round robin); trial, nil when empty, names members on trial (passive
// health's half-open members), which are eligible only while they hold no lease,
// so one trial request at a time reaches each. The maps are copied and validated
// before the lock: an incomplete map, or a key naming an unconfigured member, fails
// with ErrInvalidSnapshot and changes nothing (the spec's "incomplete, duplicate,
// unknown-member or malformed mappings refuse"), unless the view's generation was
// superseded (the maps then describe the next generation's membership): that is
// ErrSuperseded. Under the
// tier lock it rechecks the generation, tier quiesce and ceiling, selects a member from current
// counts, reserves tier and member together and only then advances the cursor.
// Refusals are ErrQuiesced (tier or every member quiesced), ErrExhausted
// (tier ceiling, or no member ready, admitting and below its ceiling) and ErrSuperseded.
// Capacity-mode leases carry the scheduler.Decision.
func (t *TierAdmission) AcquireMember(ready map[string]bool, pressure map[string]scheduler.Pressure, trial map[string]bool) (*Lease, error) {
	if t.conf.kind != KindReplica {
		return nil, errNotReplica
	}
	var in inputs
	if err := t.copyAll(&in, ready, pressure, trial); err != nil {
		return nil, err
	}
	return t.acquire(&in, nil)
}

// AcquireQueued is Acquire (direct tiers: ready, pressure and trial are ignored) or AcquireMember
// (replica tiers) for a request holding a queue ticket. Only the head of the queue may acquire; a
// ticket behind it is refused with ErrQueueAhead and keeps its place. On success the ticket leaves
// the queue and the next head is woken. A refusal because the tier (or every member) is quiesced
// takes the ticket off the queue: a quiesce empties the queue with the quiesced refusal. An
// exhausted refusal keeps the place, and so does ErrSuperseded: the ticket belongs to the tier, not
// to a generation, so the holder retries through the view of the generation in force.
func (t *TierAdmission) AcquireQueued(tk *Ticket, ready map[string]bool, pressure map[string]scheduler.Pressure, trial map[string]bool) (*Lease, error) {
	if tk == nil || tk.tier != t.tierState {
		return nil, errTicketGone
	}
	if t.conf.kind == KindDirect {
		return t.acquire(nil, tk)
	}
	var in inputs
	if err := t.copyAll(&in, ready, pressure, trial); err != nil {
		return nil, err
	}
	return t.acquire(&in, tk)
}

// copyAll copies and validates the caller's maps against the view's membership. A mismatch on a
// superseded view is ErrSuperseded: the caller's snapshots already follow the next generation.
func (t *TierAdmission) copyAll(in *inputs, ready map[string]bool, pressure map[string]scheduler.Pressure, trial map[string]bool) error {
	err := t.copyInputs(in, ready, pressure)
	if err == nil {
		err = t.copyTrial(in, trial)
	}
	if err != nil && t.superseded() {
		return errSuperseded
	}
	return err
}

// acquire is the one critical section: generation, queue order, tier checks, selection (in is nil
// for a direct tier) and reservation of tier and member together, then the cursor.
func (t *TierAdmission) acquire(in *inputs, tk *Ticket) (*Lease, error) {
	l := &Lease{tier: t.tierState} // allocated outside the lock, with the decision it may carry
	if in != nil && t.conf.strategy == StrategyCapacity {
		l.decision = new(scheduler.Decision)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.supersededLocked() {
		return nil, errSuperseded
	}
	if t.quiesced {
		// The quiesced refusal comes before queue order: every waiter gets it, in whatever order they
		// retry, and leaves the queue.
		t.leaveLocked(tk)
		return nil, errTierQuiesced
	}
	if err := t.queueAheadLocked(tk); err != nil {
		return nil, err
	}
	i, err := t.selectLocked(in, l)
	if err != nil {
		if errors.Is(err, ErrQuiesced) {
			t.leaveLocked(tk)
		}
		return nil, err
	}
	t.active++
	t.acquired++
	if i >= 0 {
		m := t.members[i]
		m.active++
		t.cursor = (i + 1) % len(t.members) // only after the reservation
		l.member = m
	}
	t.admittedLocked(tk)
	return l, nil
}

// selectLocked checks the tier and, for a replica tier, selects a member (-1 for a direct tier).
func (t *TierAdmission) selectLocked(in *inputs, l *Lease) (int, error) {
	if err := t.checkTierLocked(); err != nil {
		return -1, err
	}
	if in == nil {
		return -1, nil
	}
	if t.allMembersQuiescedLocked() {
		return -1, errMembersQuiesced
	}
	if t.conf.strategy == StrategyCapacity {
		i, err := t.rankLocked(in, l.decision)
		l.hasDecision = err == nil
		return i, err
	}
	return t.walkLocked(in)
}

// inputs is the per-call copy of the caller's maps, indexed by sorted member.
// Fixed-size arrays keep it on the stack.
type inputs struct {
	ready    [ident.MaxMembers]bool
	trial    [ident.MaxMembers]bool
	pressure [ident.MaxMembers]scheduler.Pressure
}

// copyInputs copies and validates the caller's maps. It looks every configured
// member up once per map: every member must be present (a missing one would
// silently read as not ready or unknown), and the hit count must equal the map
// length, which detects unconfigured keys without iterating the map. Values need no further
// check: a bool is a bool, and scheduler.Pressure has only unexported fields set
// by validating constructors (its zero value is UnknownPressure), so a malformed
// pressure value cannot be built outside the scheduler package.
func (t *TierAdmission) copyInputs(in *inputs, ready map[string]bool, pressure map[string]scheduler.Pressure) error {
	ids := t.conf.memberIDs
	n := len(ids)
	if len(ready) != n {
		return errIncompleteReady
	}
	if pressure != nil && len(pressure) != n {
		return errIncompletePressure
	}
	for i, id := range ids {
		r, ok := ready[id]
		if !ok {
			return errIncompleteReady
		}
		in.ready[i] = r
		if pressure == nil {
			in.pressure[i] = scheduler.UnknownPressure()
			continue
		}
		p, ok := pressure[id]
		if !ok {
			return errIncompletePressure
		}
		in.pressure[i] = p
	}
	return nil
}

// copyTrial copies the trial set: every key a configured member, at most one per member (a map
// cannot repeat a key, so a hit count equal to the length proves both).
func (t *TierAdmission) copyTrial(in *inputs, trial map[string]bool) error {
	if len(trial) == 0 {
		return nil
	}
	hits := 0
	for i, id := range t.conf.memberIDs {
		if on, ok := trial[id]; ok {
			hits++
			in.trial[i] = on
		}
	}
	if hits != len(trial) {
		return errUnknownTrial
	}
	return nil
}

func (t *TierAdmission) checkTierLocked() error {
	if t.quiesced {
		return errTierQuiesced
	}
	if c := t.cur.ceiling; c > 0 && t.active >= c {
		return errTierFull
	}
	return nil
}

func (t *tierState) allMembersQuiescedLocked() bool {
	for _, m := range t.members {
		if !m.quiesced {
			return false
		}
	}
	return true
}

// eligibleLocked reports whether member i may take one more lease right now. A member on trial
// holds at most one. The ceiling is the one in force (the view's configuration, checked current).
func (t *TierAdmission) eligibleLocked(in *inputs, i int) bool {
	m := t.members[i]
	c := t.cur.ceilings[i]
	return in.ready[i] && !m.quiesced && (c == 0 || m.active < c) &&
		(!in.trial[i] || m.active == 0)
}

// walkLocked is round robin: the first eligible member at or after the cursor
// in sorted configured order.
func (t *TierAdmission) walkLocked(in *inputs) (int, error) {
	n := len(t.members)
	for k := 0; k < n; k++ {
		i := (t.cursor + k) % n
		if t.eligibleLocked(in, i) {
			return i, nil
		}
	}
	return -1, errNoEligible
}

// rankLocked is capacity mode: every configured member becomes a candidate with
// its current (pre-reservation) count, and the pure scheduler picks. The
// decision is written into d (the lease's field) to avoid copying it around.
func (t *TierAdmission) rankLocked(in *inputs, d *scheduler.Decision) (int, error) {
	var buf [ident.MaxMembers]scheduler.Candidate
	cands := buf[:len(t.members)]
	for i := range cands {
		c, err := scheduler.NewCandidate(t.cur.memberIDs[i], t.eligibleLocked(in, i), t.members[i].active, t.cur.ceilings[i], in.pressure[i])
		if err != nil {
			return -1, fmt.Errorf("admission: tier %q: candidate: %w", t.id, err)
		}
		cands[i] = c
	}
	var err error
	if *d, err = scheduler.Rank(cands, t.cursor); err != nil {
		return -1, fmt.Errorf("admission: tier %q: rank: %w", t.id, err)
	}
	id, ok := d.SelectedMemberID()
	if !ok {
		return -1, errNoEligible
	}
	i, ok := t.cur.index[id]
	if !ok || !t.eligibleLocked(in, i) {
		// Defensive: never reserve what the scheduler should not have picked.
		return -1, fmt.Errorf("admission: tier %q: scheduler selected an ineligible member", t.id)
	}
	return i, nil
}
