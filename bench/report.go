package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anvil-llm/anvil/scenarios"
)

// Formats of the JSON outputs.
const (
	ResultFormat     = "anvil-bench-result/1"
	ComparisonFormat = "anvil-bench-compare/1"
)

// Result is one target's figures, with vllm bench serve's names and definitions (see
// docs/benchmarks/methodology.md). Latencies are in milliseconds, throughputs per second of the
// run's duration: from its start to the end of its last request, summed over rounds.
type Result struct {
	Format    string     `json:"format"`
	Label     string     `json:"label"`
	Scenario  string     `json:"scenario,omitempty"`
	Seed      uint64     `json:"seed"`
	Endpoint  string     `json:"endpoint"`
	Mode      string     `json:"mode"`
	Load      string     `json:"load"`
	Target    TargetInfo `json:"target"`
	Rounds    int        `json:"rounds"`
	SLO       SLOMillis  `json:"slo"`
	DurationS float64    `json:"duration_s"`
	// Requests are the measured requests sent; Completed the ok ones, Failed the others.
	Requests       int        `json:"requests"`
	Completed      int        `json:"completed"`
	Failed         int        `json:"failed"`
	Outcomes       []Count    `json:"outcomes"`                  // every class, in report order
	Details        []Count    `json:"details,omitempty"`         // failure details, by name
	WarmupOutcomes []Count    `json:"warmup_outcomes,omitempty"` // every class, when warm-ups were sent
	URLs           []URLCount `json:"urls"`                      // per base URL, in target order
	RetryAfter     int        `json:"retry_after_honoured"`      // failures that carried an honoured Retry-After

	TotalInputTokens     int64    `json:"total_input_tokens"`
	TotalOutputTokens    int64    `json:"total_output_tokens"`
	RequestThroughput    float64  `json:"request_throughput"`
	RequestGoodput       *float64 `json:"request_goodput,omitempty"` // only with SLOs
	OutputThroughput     float64  `json:"output_throughput"`
	TotalTokenThroughput float64  `json:"total_token_throughput"`
	PeakConcurrency      int      `json:"peak_concurrent_requests"`

	TTFT Summary `json:"ttft_ms"`
	TPOT Summary `json:"tpot_ms"`
	ITL  Summary `json:"itl_ms"`
	E2EL Summary `json:"e2el_ms"`
	// SendLag is how late the bench sent requests against their scheduled time: the bench's own
	// share of any latency, which should stay far below the figures above.
	SendLag Summary `json:"send_lag_ms"`

	// ArrivalWindowS is the plan's arrival window in seconds; 0 (absent) for a request count.
	ArrivalWindowS float64 `json:"arrival_window_s,omitempty"`

	samples samples // sorted latency samples, for plots; absent in a result read back from JSON
}

// Count is one key's tally.
type Count struct {
	Key string `json:"key"`
	N   int    `json:"n"`
}

// URLCount is one base URL's share of the measured requests.
type URLCount struct {
	Index int `json:"index"`
	Sent  int `json:"sent"`
	OK    int `json:"ok"`
}

type samples struct {
	ttft, tpot, itl, e2el []float64 // milliseconds, sorted
}

// Build computes one Result per target of a raw file (or a run), in the header's target order.
func Build(h RawHeader, recs []Record) []Result {
	out := make([]Result, 0, len(h.Targets))
	for _, t := range h.Targets {
		out = append(out, build(h, t, recs))
	}
	return out
}

func build(h RawHeader, t TargetInfo, all []Record) Result {
	r := Result{
		Format: ResultFormat, Label: h.Label, Scenario: h.Scenario, Seed: h.Seed, Endpoint: h.Endpoint,
		Mode: h.Mode, Load: h.Load, Target: t, SLO: h.SLO, ArrivalWindowS: h.ArrivalWindowS,
	}
	slo := h.SLO.slo()
	tl := newTally(t.URLs)
	for i := range all {
		if all[i].Target == t.Name {
			tl.add(&r, &all[i], slo)
		}
	}
	tl.counts(&r)
	tl.rates(&r, slo)
	r.PeakConcurrency = peak(tl.spans)
	r.TTFT, r.TPOT, r.ITL, r.E2EL = summarize(tl.s.ttft), summarize(tl.s.tpot), summarize(tl.s.itl), summarize(tl.s.e2el)
	r.SendLag = summarize(tl.lag)
	r.samples = tl.s
	return r
}

// tally accumulates one target's records for build: what the Result counts as it goes, and the
// samples and spans its figures are computed from at the end.
type tally struct {
	outcomes, warm []int
	details        map[Detail]int
	urls           []URLCount
	s              samples
	lag            []float64
	itl            []time.Duration // scratch: one record's gaps
	good           int
	warmed         bool
	ends           map[int]time.Duration // per round: the end of its last request
	spans          []span
}

func newTally(urls int) *tally {
	tl := &tally{outcomes: make([]int, numOutcomes), warm: make([]int, numOutcomes), details: map[Detail]int{},
		urls: make([]URLCount, urls), ends: map[int]time.Duration{}}
	for i := range tl.urls {
		tl.urls[i].Index = i
	}
	return tl
}

// add counts one of the target's records: a warm-up record only in the warm-up outcomes, a measured
// one in r's counters and, when it succeeded, in the latency samples.
func (tl *tally) add(r *Result, rec *Record, slo SLO) {
	if rec.Warmup {
		tl.warm[rec.Outcome]++
		tl.warmed = true
		return
	}
	r.Requests++
	r.Rounds = max(r.Rounds, rec.Round+1)
	tl.outcomes[rec.Outcome]++
	tl.urls[rec.URL].Sent++
	tl.ends[rec.Round] = max(tl.ends[rec.Round], rec.Start+rec.End)
	tl.spans = append(tl.spans, span{rec.Round, rec.Start, rec.Start + rec.End})
	tl.lag = append(tl.lag, millis(max(rec.Start-rec.Scheduled, 0)))
	if rec.Detail != DetailNone {
		tl.details[rec.Detail]++
	}
	if rec.RetryAfter > 0 {
		r.RetryAfter++
	}
	if rec.Outcome != OK {
		return
	}
	tl.urls[rec.URL].OK++
	r.TotalInputTokens += rec.PromptTokens
	r.TotalOutputTokens += rec.OutputTokens
	tl.s.e2el = append(tl.s.e2el, millis(rec.End))
	if ttft, ok := rec.TTFT(); ok {
		tl.s.ttft = append(tl.s.ttft, millis(ttft))
	}
	if tpot, ok := rec.TPOT(); ok {
		tl.s.tpot = append(tl.s.tpot, millis(tpot))
	}
	tl.itl = rec.AppendITL(tl.itl[:0])
	for _, g := range tl.itl {
		tl.s.itl = append(tl.s.itl, millis(g))
	}
	if rec.Good(slo) {
		tl.good++
	}
}

// counts writes the outcome, warm-up, detail and URL counts into r, in their fixed orders.
func (tl *tally) counts(r *Result) {
	r.Completed = tl.outcomes[OK]
	r.Failed = r.Requests - r.Completed
	for _, o := range Outcomes() {
		r.Outcomes = append(r.Outcomes, Count{o.String(), tl.outcomes[o]})
		if tl.warmed {
			r.WarmupOutcomes = append(r.WarmupOutcomes, Count{o.String(), tl.warm[o]})
		}
	}
	for _, d := range sortedDetails() {
		if n := tl.details[d]; n > 0 {
			r.Details = append(r.Details, Count{string(d), n})
		}
	}
	r.URLs = tl.urls
}

// rates writes the duration (the sum of the rounds' lengths) and the throughputs and goodput over it.
func (tl *tally) rates(r *Result, slo SLO) {
	var dur time.Duration
	for _, e := range tl.ends { // a sum of integers: the map's order cannot change it
		dur += e
	}
	r.DurationS = dur.Seconds()
	if dur > 0 {
		sec := dur.Seconds()
		r.RequestThroughput = float64(r.Completed) / sec
		r.OutputThroughput = float64(r.TotalOutputTokens) / sec
		r.TotalTokenThroughput = float64(r.TotalInputTokens+r.TotalOutputTokens) / sec
		if slo.Set() {
			g := float64(tl.good) / sec
			r.RequestGoodput = &g
		}
	} else if slo.Set() {
		zero := 0.0
		r.RequestGoodput = &zero
	}
}

// sortedDetails lists the details in a fixed order (names sorted), for reports.
func sortedDetails() []Detail {
	out := slices.Clone(details[1:])
	slices.Sort(out)
	return out
}

// span is one request's time in flight within its round.
type span struct {
	round      int
	start, end time.Duration
}

// peak is the largest number of requests in flight at once (half-open intervals: a request
// ending at t is gone when one starting at t arrives), over all rounds.
func peak(spans []span) int {
	type event struct {
		round int
		at    time.Duration
		delta int
	}
	events := make([]event, 0, 2*len(spans))
	for _, s := range spans {
		events = append(events, event{s.round, s.start, +1}, event{s.round, s.end, -1})
	}
	slices.SortFunc(events, func(a, b event) int {
		if a.round != b.round {
			return a.round - b.round
		}
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return a.delta - b.delta
	})
	cur, best := 0, 0
	for _, e := range events {
		cur += e.delta
		best = max(best, cur)
	}
	return best
}

// Comparison is a matched direct-versus-routed run: the same schedule and prompts against the
// members (client-side round robin) and through the router, side by side.
type Comparison struct {
	Format   string  `json:"format"`
	Label    string  `json:"label"`
	Scenario string  `json:"scenario,omitempty"`
	Seed     uint64  `json:"seed"`
	Direct   Result  `json:"direct"`
	Routed   Result  `json:"routed"`
	Ratios   []Ratio `json:"ratios"`
	// Added is the router's added latency: routed minus direct, per statistic, in milliseconds.
	Added []Delta `json:"added_latency_ms"`
}

// Ratio is one figure of both runs and routed / direct (0 when direct is 0).
type Ratio struct {
	Metric string  `json:"metric"`
	Direct float64 `json:"direct"`
	Routed float64 `json:"routed"`
	Ratio  float64 `json:"ratio"`
}

// Delta is routed minus direct for one latency metric.
type Delta struct {
	Metric string  `json:"metric"`
	Mean   float64 `json:"mean"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p99_9"`
}

// Compare puts a direct and a routed result side by side.
func Compare(direct, routed Result) Comparison {
	c := Comparison{Format: ComparisonFormat, Label: direct.Label, Scenario: direct.Scenario, Seed: direct.Seed,
		Direct: direct, Routed: routed}
	ratio := func(name string, d, r float64) {
		q := 0.0
		if d != 0 {
			q = r / d
		}
		c.Ratios = append(c.Ratios, Ratio{name, d, r, q})
	}
	ratio("request_throughput", direct.RequestThroughput, routed.RequestThroughput)
	ratio("output_throughput", direct.OutputThroughput, routed.OutputThroughput)
	ratio("total_token_throughput", direct.TotalTokenThroughput, routed.TotalTokenThroughput)
	if direct.RequestGoodput != nil && routed.RequestGoodput != nil {
		ratio("request_goodput", *direct.RequestGoodput, *routed.RequestGoodput)
	}
	for _, m := range latencyMetrics() {
		d, r := m.get(&direct), m.get(&routed)
		dv, rv := d.Values(), r.Values()
		for i, p := range Percentiles() {
			ratio(fmt.Sprintf("%s_p%s", m.name, pname(p)), dv[i], rv[i])
		}
		c.Added = append(c.Added, Delta{
			Metric: m.name + "_ms", Mean: r.Mean - d.Mean, P50: r.P50 - d.P50, P90: r.P90 - d.P90,
			P95: r.P95 - d.P95, P99: r.P99 - d.P99, P999: r.P999 - d.P999,
		})
	}
	return c
}

// latencyMetric names one latency summary of a result.
type latencyMetric struct {
	name, title string
	get         func(*Result) Summary
	sample      func(*samples) []float64
}

func latencyMetrics() []latencyMetric {
	return []latencyMetric{
		{"ttft", "Time to First Token", func(r *Result) Summary { return r.TTFT }, func(s *samples) []float64 { return s.ttft }},
		{"tpot", "Time per Output Token (excl. 1st token)", func(r *Result) Summary { return r.TPOT }, func(s *samples) []float64 { return s.tpot }},
		{"itl", "Inter-token Latency", func(r *Result) Summary { return r.ITL }, func(s *samples) []float64 { return s.itl }},
		{"e2el", "End-to-end Latency", func(r *Result) Summary { return r.E2EL }, func(s *samples) []float64 { return s.e2el }},
	}
}

// pname spells a percentile for names: 99.9 -> "99.9", 50 -> "50".
func pname(p float64) string { return strings.TrimSuffix(fmt.Sprintf("%g", p), ".0") }

// Describe says a plan's load in words, for reports.
func Describe(p *Plan) string {
	w := p.Workload
	var b strings.Builder
	if c := w.Closed; c != nil {
		fmt.Fprintf(&b, "closed loop: %d clients, think %s, backoff %s", c.Clients, c.Think, c.Backoff)
	} else {
		o := w.Open
		fmt.Fprintf(&b, "open loop: %s arrivals at %g/s", o.Process, o.Rate)
		if o.Process == scenarios.ProcessGamma {
			fmt.Fprintf(&b, " (shape %g)", o.Shape)
		}
	}
	if p.Requests > 0 {
		fmt.Fprintf(&b, "; %d requests", p.Requests)
	} else {
		fmt.Fprintf(&b, "; %s of arrivals", p.Duration)
	}
	fmt.Fprintf(&b, "; prompt %s, output %s tokens; streaming %g", DistString(w.PromptTokens), DistString(w.OutputTokens), *w.Streaming)
	if c := w.Cancel; c != nil {
		fmt.Fprintf(&b, "; %g cancel after %s-%s", c.Share, c.AfterMin, c.AfterMax)
	}
	if p.Warmup > 0 {
		fmt.Fprintf(&b, "; %d warm-up", p.Warmup)
		if p.WarmupClients > 0 {
			fmt.Fprintf(&b, " from %d clients", p.WarmupClients)
		}
	}
	s := b.String()
	if len(s) > maxTextField {
		s = s[:maxTextField]
	}
	return s
}

// Header is the raw file header of a plan run against targets.
func Header(p *Plan, targets []TargetInfo) RawHeader {
	h := RawHeader{
		Format: RawFormat, Label: p.Label, Scenario: p.Scenario, Seed: p.Seed, Endpoint: p.Endpoint.String(),
		Mode: p.Mode(), Load: Describe(p), SLO: p.SLO.Millis(), Targets: targets,
	}
	if p.Requests == 0 {
		h.ArrivalWindowS = p.Duration.Seconds()
	}
	return h
}
