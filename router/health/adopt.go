package health

// Adopt carries the state of every member that t and old both register, and that same reports
// unchanged (the router passes "same endpoint"), from old into t: streaks, ejections and their
// times. Everything else in t stays new (healthy, no streak). The policy is t's: a carried ejection
// keeps its end, later ones follow the new policy. When the carried ejections exceed t's cap (a
// member left, or the percentage went down), the ones ending soonest turn half-open, so the cap
// holds from the start. old is not changed.
func (t *Tracker) Adopt(old *Tracker, same func(tier, member string) bool) {
	for id, tr := range t.tiers {
		otr := old.tiers[id]
		if otr == nil {
			continue
		}
		for i, mid := range tr.ids {
			j, ok := otr.index[mid]
			if ok && same(id, mid) {
				tr.members[i] = otr.members[j]
			}
		}
		for tr.ejected() > tr.cap() {
			first := -1
			for i := range tr.members {
				if m := &tr.members[i]; m.state == Ejected && (first < 0 || m.until.Before(tr.members[first].until)) {
					first = i
				}
			}
			tr.members[first].state = HalfOpen
		}
	}
}
