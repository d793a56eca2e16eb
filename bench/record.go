package bench

import (
	"time"
)

// Record is one request as the bench saw it: the raw data every reported figure is computed from,
// kept so that any definition can be recomputed (anvil-bench report reads them back).
type Record struct {
	Target string // the target it was sent to: "direct", "routed", or the run's target name
	Round  int    // the comparison round (0 for a single run)
	ID     int    // request index within its run; warm-up requests have their own sequence
	Warmup bool   // sent before the measurement; counted, never measured
	URL    int    // index of the base URL it went to (client-side round robin over members)
	Stream bool
	// Scheduled is the intended send time since the run's start: the schedule's arrival in an open
	// loop, the client's ready time in a closed loop. Start is when it was sent; Start - Scheduled
	// is the bench's own lag.
	Scheduled time.Duration
	Start     time.Duration
	// Chunks are the times since Start of every stream frame carrying generated text, in order.
	Chunks []time.Duration
	// End is the time since Start at which the answer was complete (the stream's terminal frame,
	// the ordinary body's last byte) or the failure was seen.
	End     time.Duration
	Status  int // HTTP status, 0 when none was received
	Outcome Outcome
	Detail  Detail
	// PromptTokens and OutputTokens are the server's usage when it reported one (Usage), else the
	// requested prompt and the number of content chunks.
	PromptTokens, OutputTokens int64
	Usage                      bool
	RequestedPrompt            int
	RequestedOutput            int
	// RetryAfter is the server's Retry-After on a retryable error, when within (0, MaxRetryAfter].
	RetryAfter time.Duration
}

// TTFT is the time to the first content chunk, for a successful stream.
func (r *Record) TTFT() (time.Duration, bool) {
	if r.Outcome != OK || !r.Stream || len(r.Chunks) == 0 {
		return 0, false
	}
	return r.Chunks[0], true
}

// TPOT is vLLM's time per output token after the first: (E2EL - TTFT) / (output tokens - 1), for
// a successful stream of more than one output token.
func (r *Record) TPOT() (time.Duration, bool) {
	ttft, ok := r.TTFT()
	if !ok || r.OutputTokens <= 1 {
		return 0, false
	}
	return (r.End - ttft) / time.Duration(r.OutputTokens-1), true
}

// AppendITL appends the gaps between successive content chunks of a successful stream.
func (r *Record) AppendITL(dst []time.Duration) []time.Duration {
	if r.Outcome != OK || !r.Stream {
		return dst
	}
	for i := 1; i < len(r.Chunks); i++ {
		dst = append(dst, r.Chunks[i]-r.Chunks[i-1])
	}
	return dst
}

// Good reports whether a successful request meets the SLOs. A non-streamed request's first token
// arrives with its whole answer, so its TTFT is its end-to-end latency and TPOT does not apply.
func (r *Record) Good(slo SLO) bool {
	if r.Outcome != OK {
		return false
	}
	ttft, streamed := r.TTFT()
	if !streamed {
		ttft = r.End
	}
	if slo.TTFT > 0 && ttft > slo.TTFT || slo.E2EL > 0 && r.End > slo.E2EL {
		return false
	}
	if slo.TPOT > 0 {
		// vLLM counts a TPOT of zero for answers of one token.
		if tpot, ok := r.TPOT(); ok && tpot > slo.TPOT {
			return false
		}
	}
	return true
}
