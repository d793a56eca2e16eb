package admission

import (
	"cmp"
	"fmt"
	"slices"
)

// Reconfiguration keeps per-identity state: a tier is its ID and kind, a member is its ID and
// endpoint. Reconfigure validates the next generation's specs completely and prepares it without
// touching anything live; Commit installs it tier by tier, each under its own lock:
//
//   - A tier whose ID and kind stay keeps its counts, quiesce, cursor (on the same member, or the next one
//     by ID when that member left), queue and waiters, and its counters.
//   - A tier whose kind changed is a new tier that inherits the quiesce of the one it replaces
//     (which retires with its leases).
//   - A member whose identity stays keeps its count and quiesce. A member whose endpoint changed is
//     a new member (no leases) that inherits the quiesce of the member it replaces.
//   - A member or tier that leaves admits nothing from the commit on; its leases release into the
//     same counts, and it stays visible (Retiring) until its last lease is released.
//   - A ceiling lowered below the active count cuts nothing: admissions are refused (or queue)
//     until the count is under the ceiling in force.
//   - A lowered queue bound cuts no waiter; it refuses newcomers until the queue is under it.
//
// Admission through a generation that a Commit replaced is refused with ErrSuperseded under the
// tier lock, so a lease is always granted against the ceilings and membership in force.

// Pending is a validated next generation, built by Reconfigure and brought into force by Commit.
type Pending struct {
	prev, next *Set
	adopt      []adoption
	inherit    []inheritance
	retire     []*tierState
	done       bool
}

// adoption pairs a tier's live state with its next configuration.
type adoption struct {
	state *tierState
	conf  *tierConf
}

// inheritance carries a tier's quiesce to the new tier that replaces it under the same ID.
type inheritance struct{ from, to *tierState }

// Reconfigure validates specs exactly as New does and prepares the next generation over this
// Set's live state. It changes nothing: the Set keeps admitting under its own configuration until
// the Pending is committed. Errors wrap ErrInvalidSpec.
func (s *Set) Reconfigure(specs []TierSpec) (*Pending, error) {
	next := &Set{tiers: make(map[string]*TierAdmission, len(specs))}
	p := &Pending{prev: s, next: next}
	type identity struct {
		id   string
		kind Kind
	}
	retired := make(map[identity]*tierState, len(s.retired))
	for _, t := range s.retired {
		retired[identity{t.id, t.kindNow()}] = t
	}
	for i, spec := range specs {
		if err := validateTier(spec); err != nil {
			return nil, specError(i, spec.ID, err)
		}
		if _, dup := next.tiers[spec.ID]; dup {
			return nil, specError(i, spec.ID, fmt.Errorf("duplicate tier id"))
		}
		conf := newConf(spec)
		cur, had := s.tiers[spec.ID]
		var state *tierState
		switch old, back := retired[identity{spec.ID, spec.Kind}]; {
		case had && cur.conf.kind == spec.Kind:
			state = cur.tierState
		case back:
			state = old // back before its last lease was released: the same tier
		}
		if state == nil {
			nt := newTier(spec) // new: nothing live to install into
			next.tiers[spec.ID] = nt
			state = nt.tierState
		} else {
			next.tiers[spec.ID] = &TierAdmission{tierState: state, conf: conf}
			p.adopt = append(p.adopt, adoption{state: state, conf: conf})
		}
		if had && cur.tierState != state {
			// A tier whose kind changed is a new tier (a direct lease has no member to count
			// in): the old one retires with its leases, the new one keeps its quiesce.
			p.inherit = append(p.inherit, inheritance{from: cur.tierState, to: state})
		}
		next.ids = append(next.ids, spec.ID)
	}
	slices.Sort(next.ids)
	for _, id := range s.ids {
		if nt, kept := next.tiers[id]; !kept || nt.tierState != s.tiers[id].tierState {
			p.retire = append(p.retire, s.tiers[id].tierState)
			next.retired = append(next.retired, s.tiers[id].tierState)
		}
	}
	for _, t := range s.retired {
		if nt, back := next.tiers[t.id]; (!back || nt.tierState != t) && !t.idle() {
			next.retired = append(next.retired, t)
		}
	}
	slices.SortFunc(next.retired, func(a, b *tierState) int { return cmp.Compare(a.id, b.id) })
	return p, nil
}

// Next returns the generation the Pending prepares, for building the rest of a generation around
// it. Admission through it before Commit is refused with ErrSuperseded on every adopted tier (its
// configuration is not in force yet); only its new tiers would admit, so admit through it only
// after Commit.
func (p *Pending) Next() *Set { return p.next }

// Commit brings the prepared generation into force, tier by tier under each tier's lock, and
// returns it. From then on admission through the previous generation is refused with
// ErrSuperseded. It fails with ErrStale when the previous generation was already superseded (a
// concurrent reconfiguration won) or the Pending was committed before; it then changes nothing.
func (p *Pending) Commit() (*Set, error) {
	if p.done || !p.prev.superseded.CompareAndSwap(false, true) {
		return nil, ErrStale
	}
	p.done = true
	for _, a := range p.adopt {
		a.state.install(a.conf)
	}
	for _, in := range p.inherit {
		in.from.mu.Lock()
		q, r := in.from.quiesced, in.from.reason
		in.from.mu.Unlock()
		in.to.mu.Lock() // the new tier admits nothing yet; the lock keeps the race detector's view simple
		in.to.quiesced, in.to.reason = q, r
		in.to.mu.Unlock()
	}
	for _, t := range p.retire {
		t.retire()
	}
	return p.next, nil
}

// kindNow returns the kind in force.
func (t *tierState) kindNow() Kind {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur.kind
}

// idle reports whether the tier holds no lease and no waiter.
func (t *tierState) idle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.active == 0 && t.waiting == 0
}

// retire takes the tier out of the configuration: it admits nothing, and every waiter retries (and
// is refused as superseded).
func (t *tierState) retire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.retired = true
	t.wakeLocked()
	t.wakeAllLocked()
}

// install brings conf into force on the live tier: members are adopted by identity, the ones that
// left retire with their leases, the cursor stays on the same member (or the next by ID), and every
// waiter retries under the new configuration.
func (t *tierState) install(c *tierConf) {
	t.mu.Lock()
	defer t.mu.Unlock()
	next := ""
	if n := len(t.members); n > 0 {
		next = t.members[t.cursor%n].id
	}
	byKey := make(map[string]*memberState, len(t.members)+len(t.retiring))
	byID := make(map[string]*memberState, len(t.members))
	for _, m := range t.retiring {
		byKey[m.key] = m
	}
	for _, m := range t.members {
		byKey[m.key] = m
		byID[m.id] = m
	}
	members := make([]*memberState, len(c.memberIDs))
	for i, id := range c.memberIDs {
		if m, ok := byKey[c.keys[i]]; ok {
			m.retiring = false
			members[i] = m
			delete(byKey, c.keys[i])
			continue
		}
		m := &memberState{id: id, key: c.keys[i]}
		if prior, ok := byID[id]; ok { // the endpoint changed: a new member, the same quiesce intent
			m.quiesced, m.reason = prior.quiesced, prior.reason
		}
		members[i] = m
	}
	var retiring []*memberState
	for _, m := range t.retiring {
		if _, left := byKey[m.key]; left && m.active > 0 {
			retiring = append(retiring, m)
		}
	}
	for _, m := range t.members {
		if _, left := byKey[m.key]; left && m.active > 0 {
			m.retiring = true
			retiring = append(retiring, m)
		}
	}
	t.retiring = retiring
	slices.SortFunc(t.retiring, func(a, b *memberState) int { return cmp.Compare(a.id, b.id) })
	t.members = members
	t.cursor = 0
	if next != "" {
		i, _ := slices.BinarySearch(c.memberIDs, next)
		if i < len(c.memberIDs) {
			t.cursor = i
		}
	}
	t.cur = c
	t.retired = false
	t.wakeLocked()
	t.wakeAllLocked()
}

// dropRetiringLocked forgets a retiring member whose last lease was released.
func (t *tierState) dropRetiringLocked(m *memberState) {
	for i, r := range t.retiring {
		if r == m {
			t.retiring = slices.Delete(t.retiring, i, i+1)
			return
		}
	}
}
