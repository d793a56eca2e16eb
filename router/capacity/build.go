package capacity

import (
	"cmp"
	"slices"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// PressureReader is the pressure cache as the views need it: Peek, the read that schedules nothing.
// A nil reader means no cache: every member's telemetry is unknown.
type PressureReader interface {
	Peek(tier string) (map[string]scheduler.Pressure, error)
}

// maxCount bounds every number a view serializes: integers stay below 2^53.
const maxCount = 1<<53 - 1

// Read is the capacity view of src: Build over one admission snapshot per tier and one Peek per
// capacity tier, then each replica member's readiness verdict and passive health (AttachReadiness,
// AttachHealth), read last. Without an
// admission source every tier is unavailable.
func Read(plan []TierSpec, src Sources) Document {
	var snaps []admission.Snapshot
	if src.Admission != nil {
		snaps = src.Admission.Snapshots()
	}
	doc := Build(plan, snaps, src.Pressure)
	AttachReadiness(doc.Tiers, src.Readiness)
	AttachHealth(doc.Tiers, src.Health)
	return doc
}

// Build is the capacity view: one entry per tier of plan (sorted by ID), each validated against the
// tier's admission snapshot in snaps, and for capacity tiers each member's telemetry from one Peek of
// pressure, taken after the snapshots were read (so no admission lock is held while the cache's is
// taken). A plan tier with an unsafe or repeated ID is left out; a tier whose snapshot is absent or
// malformed is unavailable; when the plan holds more than ident.MaxCapacityMembers capacity members,
// every capacity tier is unavailable.
func Build(plan []TierSpec, snaps []admission.Snapshot, pressure PressureReader) Document {
	byID := make(map[string]admission.Snapshot, len(snaps))
	dup := map[string]bool{}
	for _, sn := range snaps {
		if _, seen := byID[sn.ID]; seen {
			dup[sn.ID] = true
		}
		byID[sn.ID] = sn
	}
	specs := shown(plan)
	overflow := capacityMembers(specs) > ident.MaxCapacityMembers
	doc := Document{Tiers: make([]Tier, 0, len(specs))}
	planned := make(map[string]bool, len(specs))
	for _, spec := range specs {
		planned[spec.ID] = true
	}
	for _, spec := range specs {
		t := Tier{ID: spec.ID, Kind: spec.Kind, Strategy: spec.Strategy, queued: spec.MaxWaiting > 0}
		sn, ok := byID[spec.ID]
		if ok && !dup[spec.ID] && !(overflow && spec.capacityTier()) && valid(spec, sn) {
			t = AdmissionTier(sn)
			if spec.capacityTier() {
				attachTelemetry(t.Members, spec.ID, pressure)
			}
		}
		doc.Tiers = append(doc.Tiers, t)
	}
	// Tiers a reload removed while they still held leases or waiters: shown, marked retiring, after
	// the configured ones, until they are idle.
	for _, sn := range snaps {
		if sn.Retiring && !dup[sn.ID] && validRetiring(sn) {
			t := AdmissionTier(sn)
			doc.Tiers = append(doc.Tiers, t)
		}
	}
	return doc
}

// validRetiring checks a retiring tier's snapshot: a safe ID, a valid state, counts in bounds and
// retiring members only (its configured members left with it).
func validRetiring(sn admission.Snapshot) bool {
	if !ident.ValidID(sn.ID) || !validState(sn.State, sn.Reason, sn.Draining, sn.Active) || !validCount(sn.Active) {
		return false
	}
	var sum int64
	for _, m := range sn.Members {
		if !ident.ValidID(m.ID) || !validState(m.State, m.Reason, m.Draining, m.Active) || !validCount(m.Active) {
			return false
		}
		sum += m.Active
	}
	return sn.Kind == admission.KindDirect || sum == sn.Active
}

// shown returns the plan's tiers that may appear at all, sorted by ID: those with a safe ID that no
// other plan tier shares (a repeated ID is ambiguous, so none of its tiers is shown).
func shown(plan []TierSpec) []TierSpec {
	count := make(map[string]int, len(plan))
	for _, t := range plan {
		count[t.ID]++
	}
	out := make([]TierSpec, 0, len(plan))
	for _, t := range plan {
		if ident.ValidID(t.ID) && count[t.ID] == 1 {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b TierSpec) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func capacityMembers(specs []TierSpec) int {
	n := 0
	for _, s := range specs {
		if s.capacityTier() {
			n += len(s.Members)
		}
	}
	return n
}

// valid checks one snapshot against its tier's configuration (T011): identity, kind and strategy,
// state, draining consistent with state and active count, the ceiling, the queue's bound and length,
// and for replica tiers the exact
// configured membership (2-16 members, sorted, unique), member ceilings and states, and member counts
// that stay within their ceilings and sum to the tier's.
func valid(spec TierSpec, sn admission.Snapshot) bool {
	switch {
	case sn.ID != spec.ID, sn.Kind != spec.Kind, sn.Retiring,
		!validState(sn.State, sn.Reason, sn.Draining, sn.Active),
		sn.MaxConcurrency != spec.MaxConcurrency, !validCount(sn.Active),
		sn.Released > maxCount, sn.ReleaseMisuse > maxCount,
		sn.MaxWaiting != spec.MaxWaiting, sn.Waiting < 0 || sn.Waiting > sn.MaxWaiting, sn.QueueFull > maxCount:
		return false
	case spec.Kind == admission.KindDirect:
		return len(spec.Members) == 0 && len(sn.Members) == 0
	case spec.Kind != admission.KindReplica, sn.Strategy != spec.Strategy:
		return false
	}
	return validMembers(spec, sn)
}

// validMembers checks the configured members (the snapshot's first members, in ID order) and then
// the retiring ones (members a reload removed, or moved to another endpoint, that still hold
// leases: no ceiling, at least one lease).
func validMembers(spec TierSpec, sn admission.Snapshot) bool {
	ids := spec.sortedMemberIDs()
	if len(ids) < ident.MinMembers || len(ids) > ident.MaxMembers || len(sn.Members) < len(ids) {
		return false
	}
	capacity := spec.capacityTier()
	var sum, ceilings int64
	for i, m := range sn.Members[:len(ids)] {
		ceiling, _ := spec.ceiling(m.ID)
		switch {
		case m.ID != ids[i], !ident.ValidID(m.ID), i > 0 && ids[i-1] == m.ID, m.Retiring,
			m.MaxConcurrency != ceiling, ceiling < 0 || ceiling > ident.MaxCeiling,
			capacity && ceiling < ident.MinCeiling,
			!validState(m.State, m.Reason, m.Draining, m.Active), !validCount(m.Active):
			return false
		}
		sum += m.Active
		ceilings += ceiling
	}
	for _, m := range sn.Members[len(ids):] {
		if !m.Retiring || !ident.ValidID(m.ID) || m.MaxConcurrency != 0 || m.Active < 1 ||
			!validState(m.State, m.Reason, m.Draining, m.Active) || !validCount(m.Active) {
			return false
		}
		sum += m.Active
	}
	if capacity && (spec.MaxConcurrency < 1 || spec.MaxConcurrency > ceilings) {
		return false
	}
	return sum == sn.Active
}

// validState: admitting without a reason or quiesced with a valid reason code, and draining exactly
// when quiesced with active leases.
func validState(state, reason string, draining bool, active int64) bool {
	switch state {
	case admission.StateAdmitting:
		if reason != "" {
			return false
		}
	case admission.StateQuiesced:
		if !ident.ValidReason(reason) {
			return false
		}
	default:
		return false
	}
	return draining == (state == admission.StateQuiesced && active > 0)
}

// validCount: a count of 0..MaxActive. It may exceed its ceiling: a reload that lowers a ceiling
// below the active count cuts nothing, and the views show both numbers.
func validCount(active int64) bool {
	return active >= 0 && active <= scheduler.MaxActive
}

// attachTelemetry reads the tier's pressure once and gives every member its telemetry. A failing
// reader, or an envelope that is not exactly the tier's members, makes every member unknown; a value
// that does not rebuild through scheduler.NewPressure makes only that member unknown.
func attachTelemetry(members []Member, tier string, pressure PressureReader) {
	unknown := scheduler.UnknownPressure()
	var got map[string]scheduler.Pressure
	if pressure != nil {
		if m, err := pressure.Peek(tier); err == nil && envelopeMatches(m, members) {
			got = m
		}
	}
	for i := range members {
		p, ok := got[members[i].ID]
		if !ok {
			p = unknown
		} else if back, err := rebuild(p); err == nil {
			p = back
		} else {
			p = unknown
		}
		members[i].Telemetry = telemetryOf(p)
	}
}

// envelopeMatches: exactly the configured members (at most ident.MaxMembers), nothing else.
func envelopeMatches(m map[string]scheduler.Pressure, members []Member) bool {
	if m == nil || len(m) != len(members) || len(m) > ident.MaxMembers {
		return false
	}
	for _, mem := range members {
		if _, ok := m[mem.ID]; !ok {
			return false
		}
	}
	return true
}

// rebuild copies a pressure through its validating constructor.
func rebuild(p scheduler.Pressure) (scheduler.Pressure, error) {
	ppm, has := p.PPM()
	return scheduler.NewPressure(p.Freshness(), ppm, has, p.RequestState(), p.KVState())
}
