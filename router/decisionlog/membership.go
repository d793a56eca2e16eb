package decisionlog

// Membership is one configuration generation's capacity membership (tier ID -> member ID ->
// max_concurrency), validated once. A router that reloads its configuration checks each record's
// evidence against the membership of the generation that admitted the request (AddWithin): a
// request admitted before a reload and finished after it keeps evidence that the new membership
// would refuse.
type Membership struct {
	tiers map[string]map[string]int64
}

// NewMembership validates and copies tiers (as WithMembership does). Errors wrap ErrInvalidEvidence.
func NewMembership(tiers map[string]map[string]int64) (*Membership, error) {
	m, err := copyMembership(tiers)
	if err != nil {
		return nil, err
	}
	return &Membership{tiers: m}, nil
}

// AddWithin is Add with m in place of the Log's own membership (nil m: the Log's own).
func (l *Log) AddWithin(r Record, m *Membership) error {
	if m == nil {
		return l.Add(r)
	}
	return l.add(r, m.tiers)
}
