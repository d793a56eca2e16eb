package decisionlog

import (
	"fmt"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// rebuildDecision copies d through the scheduler's validating constructors, so stored
// evidence is always something NewScore and NewDecision accept, whatever its origin.
// The copies go through fixed-size arrays, so evidence costs no allocation on the request path.
func rebuildDecision(d scheduler.Decision) (scheduler.Decision, error) {
	var scoreBuf [ident.MaxMembers]scheduler.Score
	var idBuf [ident.MaxMembers]string
	n := d.EligibleCount()
	for i := range n {
		s := d.Score(i)
		ppm, has := s.UpstreamPressurePPM()
		c, err := scheduler.NewScore(s.MemberID(), s.LocalActive(), s.LocalCapacity(),
			s.UpstreamUnknown(), ppm, has, s.Freshness(), s.RotatingRank())
		if err != nil {
			return scheduler.Decision{}, err
		}
		scoreBuf[i] = c
	}
	for j := range n {
		idBuf[j] = d.EligibleID(j) // NewDecision checks each against ident.ValidID, which refuses addresses
	}
	sel, has := d.SelectedMemberID()
	return scheduler.NewDecision(sel, has, d.Reason(), idBuf[:n], scoreBuf[:n])
}

// evidenceFits reports whether a (validated) decision may ride on r: only an admitted
// capacity-strategy replica record whose member is the selected member, reason
// selected. Refusals, exhaustion, direct tiers and round robin never carry evidence:
// without a lease there was no selection to explain.
func evidenceFits(r *Record, d scheduler.Decision) error {
	if r.Route != RouteReplica || r.Strategy != StrategyCapacity || !r.Outcome.Admitted() {
		return &fieldError{"replica_scheduler", ErrInconsistent}
	}
	sel, ok := d.SelectedMemberID()
	if !ok || d.Reason() != scheduler.ReasonSelected || sel != r.Member {
		return &fieldError{"replica_scheduler", ErrInconsistent}
	}
	return nil
}

// copyEvidence is the storage gate for optional evidence on an already checked record.
func copyEvidence(r *Record, d scheduler.Decision) (scheduler.Decision, error) {
	c, err := rebuildDecision(d)
	if err != nil {
		return scheduler.Decision{}, &fieldError{"replica_scheduler", ErrInvalidValue}
	}
	if err := evidenceFits(r, c); err != nil {
		return scheduler.Decision{}, err
	}
	return c, nil
}

// ValidateEvidence checks a selected capacity decision against the tier's configured
// membership (member ID -> configured max_concurrency): the decision must be well
// formed with reason selected, every scored (and so every eligible) member must be
// configured, every denominator must equal that member's ceiling, every numerator must
// be below it, and every rotating rank must fall inside the membership. Log.Add applies
// the same check for tiers given to WithMembership; callers holding evidence from
// elsewhere (captured logs, tools) call it directly.
// Errors wrap ErrInvalidEvidence and carry fixed text.
func ValidateEvidence(d scheduler.Decision, members map[string]int64) error {
	if err := checkMembership(members); err != nil {
		return err
	}
	c, err := rebuildDecision(d)
	if err != nil {
		return fmt.Errorf("%w: malformed decision", ErrInvalidEvidence)
	}
	return fitsMembership(c, members)
}

// fitsMembership is ValidateEvidence for a decision already rebuilt through the constructors and a
// membership already checked.
func fitsMembership(c scheduler.Decision, members map[string]int64) error {
	if _, ok := c.SelectedMemberID(); !ok || c.Reason() != scheduler.ReasonSelected {
		return fmt.Errorf("%w: no selected member", ErrInvalidEvidence)
	}
	for i := range c.EligibleCount() {
		s := c.Score(i)
		ceiling, ok := members[s.MemberID()]
		switch {
		case !ok:
			return fmt.Errorf("%w: member not configured", ErrInvalidEvidence)
		case s.LocalCapacity() != ceiling:
			// With the denominator pinned to the ceiling, NewScore's active < capacity is
			// exactly "numerator below the configured ceiling".
			return fmt.Errorf("%w: local capacity differs from the configured ceiling", ErrInvalidEvidence)
		case s.RotatingRank() >= len(members):
			return fmt.Errorf("%w: rotating rank outside the membership", ErrInvalidEvidence)
		}
	}
	return nil
}

// checkMembership validates one tier's configured membership: 2-16 valid member IDs,
// each with a ceiling of 1..ident.MaxCeiling.
func checkMembership(members map[string]int64) error {
	if len(members) < ident.MinMembers || len(members) > ident.MaxMembers {
		return fmt.Errorf("%w: membership must have 2-16 members", ErrInvalidEvidence)
	}
	for id, ceiling := range members {
		if !ident.ValidID(id) || ceiling < 1 || ceiling > ident.MaxCeiling {
			return fmt.Errorf("%w: malformed membership", ErrInvalidEvidence)
		}
	}
	return nil
}
