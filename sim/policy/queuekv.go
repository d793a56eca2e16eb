package policy

import (
	"math/rand/v2"
	"time"
)

// ScorerRefresh is the queue+KV scorer's own telemetry: every endpoint's metrics refreshed every
// 50 ms, as the Kubernetes Gateway API Inference Extension's endpoint picker (EPP) scrapes them
// (--refresh-metrics-interval, pkg/epp/server/runserver.go DefaultRefreshMetricsInterval).
//
// The EPP has staleness thresholds (--metrics-staleness-threshold, 2 s; the saturation detector's
// SD_METRICS_STALENESS_THRESHOLD, 200 ms), but its scheduler does not read them: the candidates
// are every endpoint of the pool (requestcontrol/director.go, datastore.PodList with
// AllPodsPredicate) and the scorers read each one's last metrics whatever their age. Staleness
// only feeds the saturation detector (saturationdetector/saturationdetector.go IsSaturated: an
// endpoint with stale metrics has no "good capacity"; when none has, sheddable requests are
// dropped, a decision about admission, not placement) and the metrics logger. So does this
// policy: every eligible member is scored on its last sample, however old, and a member never
// sampled on zeros, as the EPP's empty Metrics of a new endpoint read.
const ScorerRefresh = 50 * time.Millisecond

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
// maximized and ties are broken at random (the picker shuffles before a stable sort). Every
// eligible member is a candidate, scored on its last sample whatever its age (see ScorerRefresh).
func ChooseQueueKV(ms []Member, r *rand.Rand) int {
	cands := eligible(ms)
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
