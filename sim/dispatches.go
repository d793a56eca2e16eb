package sim

// dispatchCheck is the one-attempt boundary seen from the members: what arrived where, against what
// admission decided.
type dispatchCheck struct {
	dispatches   uint64 // arrivals at member endpoints
	redispatched uint64 // request IDs that arrived more than once
	undispatched uint64 // admitted requests no member saw
	misrouted    uint64 // arrivals at a member other than the lease's
	phantom      uint64 // arrivals of IDs that were never admitted (or are no request at all)
}

// reconcileDispatches compares the request IDs every member recorded on arrival (received[m]) with
// the router's records: an admitted request must have arrived exactly once, at the member its lease
// named; a request that was not admitted must have arrived nowhere. It reads only the members'
// lists and the requests' outcomes and members, never the router-side attempt counter.
func reconcileDispatches(reqs []Request, received [][]int32) dispatchCheck {
	var c dispatchCheck
	seen := make([]uint8, len(reqs)) // arrivals per request, saturating
	for mi, ids := range received {
		for _, id := range ids {
			c.dispatches++
			if id < 0 || int(id) >= len(reqs) {
				c.phantom++
				continue
			}
			if seen[id] < 255 {
				seen[id]++
			}
			if int(reqs[id].Member) != mi {
				c.misrouted++
			}
		}
	}
	for id := range reqs {
		admitted := reqs[id].Outcome.Admitted()
		switch {
		case !admitted && seen[id] > 0:
			c.phantom++
		case admitted && seen[id] == 0:
			c.undispatched++
		case seen[id] > 1:
			c.redispatched++
		}
	}
	return c
}

// checkDispatches fills the member-side one-attempt invariants at the end of the run.
func (w *world) checkDispatches() {
	received := make([][]int32, len(w.members))
	for i, m := range w.members {
		received[i] = m.received
	}
	c := reconcileDispatches(w.res.Requests, received)
	inv := &w.res.Invariants
	inv.MemberDispatches, inv.Redispatched, inv.Undispatched = c.dispatches, c.redispatched, c.undispatched
	inv.Misrouted, inv.Phantom = c.misrouted, c.phantom
}
