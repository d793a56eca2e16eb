package policy

import (
	"math/rand/v2"
	"time"
)

// Func chooses one member of a snapshot: the index of an eligible member, or -1 when none is
// eligible. r is the run's own seeded source; a policy that needs no randomness ignores it.
type Func func(ms []Member, r *rand.Rand) int

// Lookup returns the choice function of a reference policy.
func Lookup(name string) (Func, bool) {
	switch name {
	case LeastConnections:
		return ChooseLeastConnections, true
	case Random:
		return ChooseRandom, true
	case PowerOfTwo:
		return ChoosePowerOfTwo, true
	case QueueKV:
		return ChooseQueueKV, true
	case Oracle:
		return ChooseOracle, true
	}
	return nil, false
}

// ChooseLeastConnections is LiteLLM's least-busy routing (litellm/router_strategy/least_busy.py,
// LeastBusyLoggingHandler): each deployment's in-flight count, incremented before the call and
// decremented on success or failure, the minimum taken, ties broken by random.choice. nginx's
// least_conn and HAProxy's leastconn are the same idea without weights. Unlike the capacity
// scheduler it ignores the ceilings (a member with 47 of 48 slots busy ties with one with 47 of 96)
// and every upstream signal.
func ChooseLeastConnections(ms []Member, r *rand.Rand) int {
	best, ties := -1, 0
	for _, i := range eligible(ms) {
		switch {
		case best < 0 || ms[i].Active < ms[best].Active:
			best, ties = i, 1
		case ms[i].Active == ms[best].Active:
			// Reservoir sampling keeps a uniform choice among the ties in one pass.
			ties++
			if r.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

// ChooseRandom is a uniform choice among the eligible members: LiteLLM's default simple-shuffle
// (without rpm/tpm weights) and the SGLang router's random policy.
func ChooseRandom(ms []Member, r *rand.Rand) int {
	el := eligible(ms)
	if len(el) == 0 {
		return -1
	}
	return el[r.IntN(len(el))]
}

// LoadCheckInterval is how often PowerOfTwo's load view is refreshed: the SGLang router's
// worker_load_check_interval (10 s by default in sglang_router's RouterArgs), the period of its
// load monitor's /get_load polls.
const LoadCheckInterval = 10 * time.Second

// ChoosePowerOfTwo is power-of-two choices as the SGLang router (and the vLLM router forked from
// it) implement it (sgl-router/src/policies/power_of_two.rs, PowerOfTwoPolicy::select_worker):
// two distinct healthy workers drawn at random, the one with the lower load taken, the first of the
// two on a tie. The load is the cached one of the load monitor (running+waiting as the engine
// reported it at the last poll); a worker the monitor has no load for falls back to the router's
// own in-flight count, as the policy falls back to worker.load().
func ChoosePowerOfTwo(ms []Member, r *rand.Rand) int {
	el := eligible(ms)
	switch len(el) {
	case 0:
		return -1
	case 1:
		return el[0]
	}
	a := r.IntN(len(el))
	b := r.IntN(len(el) - 1)
	if b >= a {
		b++ // two distinct draws, as choose_multiple(2)
	}
	i, j := el[a], el[b]
	if p2cLoad(ms[i]) <= p2cLoad(ms[j]) {
		return i
	}
	return j
}

func p2cLoad(m Member) int64 {
	if m.Load.Known {
		return m.Load.Running + m.Load.Waiting
	}
	return m.Active
}

// ChooseOracle is the clairvoyant greedy oracle: the member where this request would complete
// earliest, given the true state of every engine now and the true lengths of every request in it
// (Member.Completion, computed by the simulator). Ties go to the member with fewer router-local
// leases, then to the first. It is greedy and myopic: it knows nothing of later arrivals and never
// revisits a placement, so it bounds greedy placement, not every schedule. When no member would
// complete the request, it still places it (on the first eligible member with the fewest leases).
func ChooseOracle(ms []Member, _ *rand.Rand) int {
	best := -1
	for _, i := range eligible(ms) {
		if best < 0 || ms[i].Completion < ms[best].Completion ||
			ms[i].Completion == ms[best].Completion && ms[i].Active < ms[best].Active {
			best = i
		}
	}
	return best
}
