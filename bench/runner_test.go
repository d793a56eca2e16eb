package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
)

// okStream answers a short stream after latency.
func okStream(latency time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(latency)
		sseHeaders(w)
		flushWrite(w, chatChunk("a"))
		flushWrite(w, doneFrame)
	}
}

// hang answers nothing until the client leaves.
func hang(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

func runPlan(t *testing.T, h http.Handler, p Plan) *RunResult {
	t.Helper()
	c, base, stop := pipeServer(t, h)
	defer stop()
	res, err := Run(t.Context(), c, p, Target{Name: "t", URLs: []string{base}, Model: "m"}, 0, nil)
	require.NoError(t, err)
	return res
}

// A closed-loop client refused with a Retry-After waits exactly that long before its next request,
// as OpenAI's SDKs do; without an honoured one (absent, over 60 s, or on a status the SDKs do not
// retry) it waits its backoff.
func TestRetryAfterPacesClosedLoopClients(t *testing.T) {
	const backoff = 50 * time.Millisecond
	cases := []struct {
		name   string
		status int
		header func(h http.Header)
		wait   time.Duration
	}{
		{"seconds", 503, func(h http.Header) { h.Set("Retry-After", "3") }, 3 * time.Second},
		{"fractional seconds", 503, func(h http.Header) { h.Set("Retry-After", "0.25") }, 250 * time.Millisecond},
		{"http date", 503, func(h http.Header) { h.Set("Retry-After", time.Now().Add(5*time.Second).UTC().Format(http.TimeFormat)) }, 5 * time.Second},
		{"milliseconds header first", 503, func(h http.Header) { h.Set("Retry-After-Ms", "1500"); h.Set("Retry-After", "9") }, 1500 * time.Millisecond},
		{"rate limited", 429, func(h http.Header) { h.Set("Retry-After", "2") }, 2 * time.Second},
		{"server error", 500, func(h http.Header) { h.Set("Retry-After", "4") }, 4 * time.Second},
		{"the most honoured", 503, func(h http.Header) { h.Set("Retry-After", "60") }, time.Minute},
		{"too long", 503, func(h http.Header) { h.Set("Retry-After", "61") }, backoff},
		{"zero", 503, func(h http.Header) { h.Set("Retry-After", "0") }, backoff},
		{"unreadable", 503, func(h http.Header) { h.Set("Retry-After", "soon") }, backoff},
		{"absent", 503, func(http.Header) {}, backoff},
		{"not retried", 400, func(h http.Header) { h.Set("Retry-After", "3") }, backoff},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int64
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if n.Add(1) == 1 {
						_, _ = io.Copy(io.Discard, r.Body)
						tc.header(w.Header())
						w.WriteHeader(tc.status)
						return
					}
					okStream(10*time.Millisecond)(w, r)
				})
				res := runPlan(t, h, closedPlan(1, 3, 0, backoff, 1))
				require.Len(t, res.Records, 3)
				first, second, third := res.Records[0], res.Records[1], res.Records[2]
				assert.Equal(t, statusOutcome(tc.status), first.Outcome)
				assert.Equal(t, time.Duration(0), first.Start)
				assert.Equal(t, tc.wait, second.Start-(first.Start+first.End), "the pause after the refusal")
				assert.Equal(t, OK, second.Outcome)
				assert.Equal(t, second.Start+second.End, third.Start, "no pause after a success without think time")
				if tc.wait != backoff {
					assert.Equal(t, tc.wait, first.RetryAfter)
				} else {
					assert.Zero(t, first.RetryAfter)
				}
			})
		})
	}
}

// Think time follows successes; every request of a closed loop is scheduled when its client is
// ready and leaves then.
func TestClosedLoopThinkTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := runPlan(t, okStream(10*time.Millisecond), closedPlan(1, 3, 100*time.Millisecond, time.Second, 1))
		require.Len(t, res.Records, 3)
		for i, want := range []time.Duration{0, ms(110), ms(220)} {
			assert.Equal(t, want, res.Records[i].Start)
			assert.Equal(t, want, res.Records[i].Scheduled)
			assert.Equal(t, OK, res.Records[i].Outcome)
		}
	})
}

// A closed loop bounded by a duration sends a client's next request only while the window is open,
// and lets the requests in flight finish.
func TestClosedLoopDurationWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := closedPlan(2, 0, 0, time.Second, 1)
		p.Duration = time.Second
		res := runPlan(t, okStream(300*time.Millisecond), p)
		require.Len(t, res.Records, 8) // each client at 0, 300, 600 and 900 ms
		for i, r := range res.Records {
			assert.Equal(t, i, r.ID)
			assert.Equal(t, OK, r.Outcome)
			assert.Less(t, r.Start, time.Second)
		}
		assert.Equal(t, 2, res.MaxInFlight)
		assert.Empty(t, res.Stopped)
	})
}

// A run's arrivals end when its until is closed, well inside its window: no request leaves after
// that, the ones in flight run to their end (none is cut), and the run counts as run to its end.
func TestRunUntilEndsArrivalsWithoutCutting(t *testing.T) {
	for _, mode := range []string{"closed", "open"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := closedPlan(2, 0, 0, time.Second, 1)
				if mode == "open" {
					p = openPlan(scenarios.ProcessConstant, 10, 0, 0) // one arrival every 100 ms
				}
				p.Requests, p.Duration = 0, time.Hour // the bound, far off
				until := make(chan struct{})
				time.AfterFunc(950*time.Millisecond, func() { close(until) }) // between two arrivals
				c, base, stop := pipeServer(t, okStream(300*time.Millisecond))
				defer stop()
				start := time.Now()
				res, err := RunUntil(t.Context(), c, p, Target{Name: "t", URLs: []string{base}, Model: "m"}, 0, nil, until)
				require.NoError(t, err)
				require.NotEmpty(t, res.Records)
				for _, r := range res.Records {
					assert.Equal(t, OK, r.Outcome, "request %d", r.ID)
					assert.Less(t, r.Start, 950*time.Millisecond, "request %d left after until was closed", r.ID)
				}
				want := 8 // each client at 0, 300, 600 and 900 ms
				if mode == "open" {
					want = 9 // at 100, 200, ... 900 ms
				}
				assert.Len(t, res.Records, want)
				assert.Empty(t, res.Stopped)
				assert.Equal(t, 1200*time.Millisecond, time.Since(start), "the last requests (900 ms) ran to their end")
			})
		})
	}
}

// An open loop sends every request at its scheduled time, whatever the target does.
func TestOpenLoopKeepsTheSchedule(t *testing.T) {
	for _, process := range []string{scenarios.ProcessPoisson, scenarios.ProcessGamma, scenarios.ProcessConstant} {
		t.Run(process, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				shape := 0.0
				if process == scenarios.ProcessGamma {
					shape = 0.5
				}
				p := openPlan(process, 20, shape, 40)
				var want []time.Duration
				arr := NewArrivals(*p.Workload.Open, p.Seed, p.Requests, 0)
				for at, ok := arr.Next(); ok; at, ok = arr.Next() {
					want = append(want, at)
				}
				require.Len(t, want, 40)
				res := runPlan(t, okStream(time.Second), p) // far slower than the gaps
				require.Len(t, res.Records, 40)
				for i, r := range res.Records {
					assert.Equal(t, want[i], r.Scheduled)
					assert.Equal(t, want[i], r.Start, "request %d left late", i)
					assert.Equal(t, OK, r.Outcome)
				}
				assert.Greater(t, res.MaxInFlight, 1)
			})
		})
	}
}

// The over-saturation stop on in-flight requests ends the run, cancels what is in flight and says why.
func TestStopOnInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := openPlan(scenarios.ProcessConstant, 100, 0, 50)
		p.Stop.MaxInFlight = 5
		res := runPlan(t, http.HandlerFunc(hang), p)
		require.Len(t, res.Records, 5)
		assert.Contains(t, res.Stopped, "more than 5 requests in flight")
		for i, r := range res.Records {
			assert.Equal(t, Canceled, r.Outcome)
			assert.Equal(t, DetailRunStopped, r.Detail)
			assert.Equal(t, ms(10*float64(i+1)), r.Start)
			assert.Equal(t, ms(60)-r.Start, r.End, "cancelled when the sixth arrival found five in flight")
		}
	})
}

// The over-saturation stop on the error rate looks at the last N measured requests only.
func TestStopOnErrorRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) <= 3 {
				okStream(time.Millisecond)(w, r)
				return
			}
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusInternalServerError)
		})
		p := closedPlan(1, 100, 0, 10*time.Millisecond, 1)
		p.Stop = Stop{MaxErrorRate: 0.5, ErrorWindow: 4}
		res := runPlan(t, h, p)
		// ok ok ok fail: 1 of 4; then fail fail: 3 of 4 > 2 stops.
		require.Len(t, res.Records, 6)
		assert.Equal(t, HTTP5xx, res.Records[5].Outcome)
		assert.Contains(t, res.Stopped, "more than 0.5 of the last 4 requests failed")
	})
}

// Warm-up requests run first on shapes of their own, are flagged, and the measured phase starts
// its clock after them.
func TestWarmup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := closedPlan(2, 4, 0, time.Second, 1)
		p.Warmup = 3
		p.Workload.PromptTokens = scenarios.Dist{Dist: scenarios.DistUniform, Min: 1, Max: 1000}
		res := runPlan(t, okStream(100*time.Millisecond), p)
		require.Len(t, res.Records, 7)
		measured := NewShapes(p.Workload, p.Seed)
		for i, r := range res.Records {
			if i < 3 {
				assert.True(t, r.Warmup)
				assert.Equal(t, i, r.ID)
				continue
			}
			assert.False(t, r.Warmup)
			assert.Equal(t, i-3, r.ID)
			assert.Equal(t, measured.Next().Prompt, r.RequestedPrompt, "measured shapes do not depend on the warm-up")
		}
		assert.Equal(t, time.Duration(0), res.Records[3].Start, "the measured clock starts after the warm-up")
	})
}

// Warm-up clients send the warm-up at the concurrency asked for, so an open loop can warm as many
// connections as it will hold.
func TestWarmupClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := openPlan(scenarios.ProcessConstant, 10, 0, 2)
		p.Warmup, p.WarmupClients = 12, 6
		res := runPlan(t, okStream(100*time.Millisecond), p)
		require.Len(t, res.Records, 14)
		assert.Equal(t, 6, res.MaxInFlight)
		for _, r := range res.Records[:6] {
			assert.Equal(t, time.Duration(0), r.Start, "six clients start together")
		}
	})
}

// The workload's own client cancellations end a request after its drawn delay.
func TestScheduledCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := closedPlan(1, 2, 0, time.Millisecond, 1)
		p.Workload.Cancel = &scenarios.Cancel{Share: 1, AfterMin: 50 * time.Millisecond, AfterMax: 50 * time.Millisecond}
		res := runPlan(t, http.HandlerFunc(hang), p)
		require.Len(t, res.Records, 2)
		for _, r := range res.Records {
			assert.Equal(t, Canceled, r.Outcome)
			assert.Equal(t, DetailScheduledCancel, r.Detail)
			assert.Equal(t, ms(50), r.End)
		}
	})
}

// Request i gets shape i whatever the timing: a run and a rerun with other latencies send the
// same shapes by ID, the scenario generator's sequence for the seed.
func TestShapesFollowRequestOrder(t *testing.T) {
	p := closedPlan(4, 40, 0, time.Second, 0.5)
	p.Workload.PromptTokens = scenarios.Dist{Dist: scenarios.DistUniform, Min: 1, Max: 2000}
	p.Workload.OutputTokens = scenarios.Dist{Dist: scenarios.DistUniform, Min: 1, Max: 50}
	var runs [][]Record
	for _, latency := range []time.Duration{3 * time.Millisecond, 17 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				okStream(time.Duration(n.Add(1)%5)*latency)(w, r)
			})
			runs = append(runs, runPlan(t, h, p).Records)
		})
	}
	require.Len(t, runs, 2)
	want := NewShapes(p.Workload, p.Seed)
	for i := range runs[0] {
		sh := want.Next()
		for _, recs := range runs {
			assert.Equal(t, i, recs[i].ID)
			assert.Equal(t, sh.Prompt, recs[i].RequestedPrompt)
			assert.Equal(t, sh.Output, recs[i].RequestedOutput)
			assert.Equal(t, sh.Stream, recs[i].Stream)
		}
	}
}

// Cancelling the caller's context stops the run and says so.
func TestInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, base, stop := pipeServer(t, http.HandlerFunc(hang))
		defer stop()
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		res, err := Run(ctx, c, closedPlan(3, 10, 0, time.Millisecond, 1), Target{Name: "t", URLs: []string{base}, Model: "m"}, 0, nil)
		require.NoError(t, err)
		assert.Equal(t, "interrupted", res.Stopped)
		require.Len(t, res.Records, 3)
		for _, r := range res.Records {
			assert.Equal(t, Canceled, r.Outcome)
		}
	})
}

// Requests go round robin over the target's URLs by request ID.
func TestRoundRobinOverURLs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hits [3]atomic.Int64
		c, base, stop := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/a/v1/chat/completions":
				hits[0].Add(1)
			case "/b/v1/chat/completions":
				hits[1].Add(1)
			case "/c/v1/chat/completions":
				hits[2].Add(1)
			}
			okStream(time.Millisecond)(w, r)
		}))
		defer stop()
		tg := Target{Name: "direct", URLs: []string{base + "/a", base + "/b/", base + "/c"}, Model: "m"}
		res, err := Run(t.Context(), c, closedPlan(2, 9, 0, time.Millisecond, 1), tg, 0, nil)
		require.NoError(t, err)
		for i, r := range res.Records {
			assert.Equal(t, i%3, r.URL)
		}
		for i := range hits {
			assert.Equal(t, int64(3), hits[i].Load())
		}
	})
}

// The progress bar starts and stops cleanly on any writer, whether the run is bounded by a count
// or by time.
func TestProgressStartsAndStops(t *testing.T) {
	live := &Live{}
	live.Done.Add(3)
	for _, total := range []int64{10, 0} {
		var out bytes.Buffer
		p := StartProgress(&out, "label target", live, total, time.Second)
		p.Stop()
	}
}
