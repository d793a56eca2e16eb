package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// MaxResultBytes bounds a result file: a run's figures take a few kilobytes.
const MaxResultBytes = 1 << 20

// ErrResult is wrapped by every error about a result file; the message says what is wrong in fixed
// words, never echoing the file's content.
var ErrResult = errors.New("invalid bench result")

// ReadResult reads a run's JSON result (anvil-bench run --json) strictly: exactly one JSON object
// with exactly the documented keys (no unknown or duplicate key, no wrong type, nothing after it),
// every figure within its bounds and consistent with the others: the outcome classes sum to the
// requests, the latency percentiles are ordered, a latency sample holds no more requests than
// completed. A comparison's result (anvil-bench compare --json) is refused by name.
func ReadResult(r io.Reader) (Result, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxResultBytes+1))
	if err != nil {
		return Result{}, fmt.Errorf("read bench result: %w", err)
	}
	if len(data) > MaxResultBytes {
		return Result{}, fmt.Errorf("%w: larger than %d bytes", ErrResult, MaxResultBytes)
	}
	var res Result
	if err := strictDecode(data, &res); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrResult, err)
	}
	if err := res.validate(); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrResult, err)
	}
	return res, nil
}

func (r *Result) validate() error {
	if r.Format != ResultFormat {
		if r.Format == ComparisonFormat {
			return errors.New("a comparison's result, not a run's (anvil-bench run --json writes one)")
		}
		return fmt.Errorf("format must be %s", ResultFormat)
	}
	h := RawHeader{Format: RawFormat, Label: r.Label, Scenario: r.Scenario, Seed: r.Seed, Endpoint: r.Endpoint,
		Mode: r.Mode, Load: r.Load, SLO: r.SLO, Targets: []TargetInfo{r.Target}, ArrivalWindowS: r.ArrivalWindowS}
	if err := h.validate(); err != nil {
		return err
	}
	for _, check := range []func() error{r.validateCounts, r.validateOutcomes, r.validateFigures, r.validateLatencies} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateCounts checks the request counts and the per-URL tallies.
func (r *Result) validateCounts() error {
	switch {
	case r.Requests < 0 || r.Requests > MaxRequests*MaxRounds:
		return errors.New("requests out of range")
	case r.Completed < 0 || r.Failed < 0 || r.Completed+r.Failed != r.Requests:
		return errors.New("completed and failed must sum to requests")
	case r.Rounds < 0 || r.Rounds > MaxRounds || (r.Rounds == 0) != (r.Requests == 0):
		return fmt.Errorf("rounds must be from 1 to %d when requests were sent, else 0", MaxRounds)
	case r.RetryAfter < 0 || r.RetryAfter > r.Failed:
		return errors.New("retry_after_honoured must be from 0 to failed")
	case r.PeakConcurrency < 0 || r.PeakConcurrency > r.Requests:
		return errors.New("peak_concurrent_requests must be from 0 to requests")
	case len(r.URLs) != r.Target.URLs:
		return errors.New("urls must list every base URL of the target")
	}
	sent, ok := 0, 0
	for i, u := range r.URLs {
		if u.Index != i || u.Sent < 0 || u.OK < 0 || u.OK > u.Sent || u.Sent > r.Requests {
			return errors.New("urls must be in index order, with 0 <= ok <= sent")
		}
		sent, ok = sent+u.Sent, ok+u.OK
	}
	if sent != r.Requests || ok != r.Completed {
		return errors.New("urls must account for every request and success")
	}
	return nil
}

// validateOutcomes checks the outcome classes (every class in report order), the failure details
// (known names, sorted, positive) and the warm-up classes.
func (r *Result) validateOutcomes() error {
	sum, err := classes(r.Outcomes)
	if err != nil {
		return err
	}
	if sum != r.Requests || r.Outcomes[OK].N != r.Completed {
		return errors.New("outcomes must sum to requests, ok to completed")
	}
	if r.WarmupOutcomes != nil {
		if _, err := classes(r.WarmupOutcomes); err != nil {
			return fmt.Errorf("warmup_%w", err)
		}
	}
	detailed := 0
	for i, d := range r.Details {
		if Detail(d.Key) == DetailNone || !validDetail(Detail(d.Key)) || d.N < 1 ||
			i > 0 && d.Key <= r.Details[i-1].Key {
			return errors.New("details must be known detail names, sorted, each counted at least once")
		}
		detailed += d.N
	}
	if detailed > r.Failed {
		return errors.New("details must not count more than the failed requests")
	}
	return nil
}

// classes checks a list of every outcome class in report order and returns its total.
func classes(cs []Count) (int, error) {
	if len(cs) != int(numOutcomes) {
		return 0, errors.New("outcomes must list every outcome class")
	}
	sum := 0
	for i, c := range cs {
		if c.Key != Outcome(i).String() || c.N < 0 || c.N > MaxRequests*MaxRounds {
			return 0, errors.New("outcomes must list every outcome class in order, each counted from 0")
		}
		sum += c.N
	}
	return sum, nil
}

// validateFigures checks the token totals, throughputs and goodput.
func (r *Result) validateFigures() error {
	switch {
	case !finite(r.DurationS) || r.DurationS < 0 || r.DurationS > maxOffset.Seconds()*MaxRounds:
		return errors.New("duration_s must be finite and not negative")
	case r.TotalInputTokens < 0 || r.TotalOutputTokens < 0 || r.TotalInputTokens > maxTokens || r.TotalOutputTokens > maxTokens ||
		r.Completed == 0 && r.TotalInputTokens+r.TotalOutputTokens > 0:
		return errors.New("token totals must be from 0 to 2^53-1, and 0 without a success")
	case !rate(r.RequestThroughput) || !rate(r.OutputThroughput) || !rate(r.TotalTokenThroughput):
		return errors.New("throughputs must be finite and not negative")
	case (r.RequestGoodput != nil) != r.SLO.slo().Set():
		return errors.New("request_goodput is given exactly when an SLO is set")
	case r.RequestGoodput != nil && (!rate(*r.RequestGoodput) || *r.RequestGoodput > r.RequestThroughput):
		return errors.New("request_goodput must be finite, not negative and at most request_throughput")
	}
	return nil
}

func rate(v float64) bool { return finite(v) && v >= 0 }

// validateLatencies checks every latency summary: ordered statistics, and samples no larger than
// the requests they come from (ITL counts gaps, so only its order is checked).
func (r *Result) validateLatencies() error {
	for _, s := range []struct {
		name string
		sum  Summary
		max  int // the most samples it can hold; -1 for no bound
	}{
		{"ttft_ms", r.TTFT, r.Completed}, {"tpot_ms", r.TPOT, r.Completed}, {"itl_ms", r.ITL, -1},
		{"e2el_ms", r.E2EL, r.Completed}, {"send_lag_ms", r.SendLag, r.Requests},
	} {
		if err := s.sum.validate(s.max); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	if r.E2EL.N != r.Completed || r.SendLag.N != r.Requests {
		return errors.New("e2el_ms counts every success, send_lag_ms every request")
	}
	return nil
}

// validate checks one summary: empty and all zero, or n samples whose statistics are finite, not
// negative and ordered (min <= p50 <= ... <= p99.9 <= max, the mean within [min, max]).
func (s Summary) validate(most int) error {
	if s.N == 0 {
		if s != (Summary{}) {
			return errors.New("an empty sample has all statistics 0")
		}
		return nil
	}
	if s.N < 0 || most >= 0 && s.N > most || s.N > MaxRawRecords*MaxRounds {
		return errors.New("n out of range")
	}
	vals := []float64{s.Min, s.P50, s.P90, s.P95, s.P99, s.P999, s.Max}
	for i, v := range vals {
		if !finite(v) || v < 0 || v > millis(maxOffset) || i > 0 && v < vals[i-1] {
			return errors.New("statistics must be finite, not negative and ordered min <= p50 <= ... <= max")
		}
	}
	// The mean and deviation are sums of many terms: a last-bit rounding may put the mean of equal
	// values a hair outside [min, max].
	slack := 1e-9 * math.Max(1, s.Max)
	if !finite(s.Mean) || s.Mean < s.Min-slack || s.Mean > s.Max+slack || !finite(s.Std) || s.Std < 0 {
		return errors.New("mean must lie within [min, max] and std must be finite and not negative")
	}
	return nil
}
