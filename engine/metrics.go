package engine

import "time"

// MaxBuckets is the largest number of finite buckets of any engine histogram
// (vLLM's time-to-first-token list).
const MaxBuckets = 22

// TTFTBuckets are vLLM's upper bounds (seconds) for
// vllm:time_to_first_token_seconds.
func TTFTBuckets() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
}

// ITLBuckets are vLLM's upper bounds (seconds) for
// vllm:inter_token_latency_seconds.
func ITLBuckets() []float64 {
	return []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
}

// RequestLatencyBuckets are vLLM's upper bounds (seconds) for
// vllm:e2e_request_latency_seconds and vllm:request_queue_time_seconds.
func RequestLatencyBuckets() []float64 {
	return []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
}

// Histogram is a value copy of one latency histogram in Prometheus form.
type Histogram struct {
	N           int                 // finite buckets in use
	UpperBounds [MaxBuckets]float64 // seconds, ascending; first N valid
	Cumulative  [MaxBuckets]uint64  // observations <= UpperBounds[i]
	Count       uint64              // all observations (the +Inf bucket)
	Sum         time.Duration       // exact sum of observations
}

// SumSeconds is Sum in seconds, as Prometheus exposes it.
func (h Histogram) SumSeconds() float64 { return h.Sum.Seconds() }

// FinishCounts is vllm:request_success_total by finished_reason.
type FinishCounts struct {
	Stop, Length, Abort uint64
}

// Get returns the count for r (0 for FinishNone).
func (c FinishCounts) Get(r FinishReason) uint64 {
	switch r {
	case FinishStop:
		return c.Stop
	case FinishLength:
		return c.Length
	case FinishAbort:
		return c.Abort
	}
	return 0
}

// Total is the number of finished requests.
func (c FinishCounts) Total() uint64 { return c.Stop + c.Length + c.Abort }

func (c *FinishCounts) add(r FinishReason) {
	switch r {
	case FinishStop:
		c.Stop++
	case FinishLength:
		c.Length++
	case FinishAbort:
		c.Abort++
	}
}

// StepStats describes the most recently started step.
type StepStats struct {
	Start, End    time.Time
	Seqs          int // scheduled requests
	Tokens        int // scheduled tokens (<= max_num_batched_tokens)
	PrefillTokens int
	DecodeSeqs    int
	ContextTokens int // context tokens read: sum of context length after the step
	Preempted     int // requests preempted while composing the step
}

// Metrics is a value copy of the engine's vLLM-style metrics.
type Metrics struct {
	Running int // vllm:num_requests_running
	Waiting int // vllm:num_requests_waiting
	// vllm:num_requests_waiting_by_reason. vLLM counts as "deferred" the
	// requests skipped for transient constraints (LoRA budget, KV transfer,
	// blocked status); this model has none of those, so every waiting
	// request waits for capacity and WaitingDeferred stays 0.
	WaitingCapacity, WaitingDeferred int
	// KVUsage is vllm:kv_cache_usage_perc, a 0-1 fraction computed as vLLM's
	// BlockPool.get_usage: 1 - free/(num_gpu_blocks-1), the null block
	// excluded. Blocks held back by SetReservedBlocks count as used.
	KVUsage     float64
	UsedBlocks  int // blocks held by requests plus reserved ones
	TotalBlocks int // usable blocks: num_gpu_blocks - 1

	Preemptions      uint64       // vllm:num_preemptions_total
	PromptTokens     uint64       // vllm:prompt_tokens_total (counted at the first token)
	GenerationTokens uint64       // vllm:generation_tokens_total
	Success          FinishCounts // vllm:request_success_total{finished_reason}
	Submitted        uint64       // accepted by Submit
	Steps            uint64       // steps started

	TTFT      Histogram // vllm:time_to_first_token_seconds
	ITL       Histogram // vllm:inter_token_latency_seconds
	E2E       Histogram // vllm:e2e_request_latency_seconds
	QueueTime Histogram // vllm:request_queue_time_seconds

	LastStep StepStats
}

// hist accumulates observations against bounds held in nanoseconds, so the
// le comparison is exact and observation costs a short integer scan.
type hist struct {
	n      int
	bounds [MaxBuckets]int64  // nanoseconds
	counts [MaxBuckets]uint64 // non-cumulative; values above the last bound only in count
	count  uint64
	sum    time.Duration
}

func newHist(seconds []float64) hist {
	h := hist{n: len(seconds)}
	for i, s := range seconds {
		h.bounds[i] = int64(s*1e3+0.5) * int64(time.Millisecond) // every vLLM bound is whole milliseconds
	}
	return h
}

// observe records n observations of d.
func (h *hist) observe(d time.Duration, n uint64) {
	if n == 0 {
		return
	}
	h.count += n
	h.sum += d * time.Duration(n)
	for i := 0; i < h.n; i++ {
		if int64(d) <= h.bounds[i] {
			h.counts[i] += n
			return
		}
	}
}

func (h *hist) view() Histogram {
	v := Histogram{N: h.n, Count: h.count, Sum: h.sum}
	var cum uint64
	for i := 0; i < h.n; i++ {
		cum += h.counts[i]
		v.UpperBounds[i] = float64(h.bounds[i]) / 1e9
		v.Cumulative[i] = cum
	}
	return v
}
