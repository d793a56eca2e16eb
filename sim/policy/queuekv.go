package policy

import (
	"math/rand/v2"
	"time"
)

// The queue+KV scorer's own telemetry, as the Kubernetes Gateway API Inference Extension's
// endpoint picker (EPP) runs it: every endpoint's metrics refreshed every 50 ms
// (--refresh-metrics-interval) and a sample older than 2 s stale (--metrics-staleness-threshold).
const (
	ScorerRefresh   = 50 * time.Millisecond
	ScorerStaleness = 2 * time.Second
)

// Scorer weights: the EPP's default profile weighs queue-scorer and kv-cache-utilization-scorer
// equally (2 and 2, beside a prefix-cache-scorer of 3 that has nothing to score here: the
// simulated prompts share no prefixes).
const (
	QueueWeight = 2.0
	KVWeight    = 2.0
)

// ChooseQueueKV is the EPP's weighted scorer with its max-score picker
// (gateway-api-inference-extension pkg/epp/scheduling/framework/plugins): queue-scorer gives
// (max-q)/(max-q_min) over the candidates' waiting-queue sizes, min-max normalized (1 for every
// candidate when all are equal); kv-cache-utilization-scorer gives 1-KV; the weighted sum is
// maximized and ties are broken at random (the picker shuffles before a stable sort). Members whose
// sample is stale (older than ScorerStaleness) or missing are taken as saturated, as the EPP's
// saturation detector takes them: they are candidates only when no member has a fresh sample.
func ChooseQueueKV(ms []Member, r *rand.Rand) int {
	cands := freshEligible(ms)
	if len(cands) == 0 {
		cands = eligible(ms)
	}
	if len(cands) == 0 {
		return -1
	}
	lo, hi := ms[cands[0]].Load.Waiting, ms[cands[0]].Load.Waiting
	for _, i := range cands[1:] {
		lo, hi = min(lo, ms[i].Load.Waiting), max(hi, ms[i].Load.Waiting)
	}
	best, bestScore, ties := -1, 0.0, 0
	for _, i := range cands {
		s := QueueWeight*queueScore(ms[i].Load.Waiting, lo, hi) + KVWeight*(1-ms[i].Load.KV)
		switch {
		case best < 0 || s > bestScore:
			best, bestScore, ties = i, s, 1
		case s == bestScore:
			ties++
			if r.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

// queueScore is the queue-scorer's min-max normalization.
func queueScore(q, lo, hi int64) float64 {
	if hi == lo {
		return 1
	}
	return float64(hi-q) / float64(hi-lo)
}

func freshEligible(ms []Member) []int {
	var out []int
	for _, i := range eligible(ms) {
		if l := ms[i].Load; l.Known && l.Age <= ScorerStaleness {
			out = append(out, i)
		}
	}
	return out
}
