package decisionlog

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/scheduler"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// t0 is a fixed start time with nanoseconds, so the encoding's precision is exercised.
var t0 = time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)

type member struct {
	id       string
	eligible bool
	active   int64
	capacity int64
	pressure scheduler.Pressure
}

func fresh(t testing.TB, ppm int64) scheduler.Pressure {
	t.Helper()
	p, err := scheduler.NewPressure(scheduler.FreshnessFresh, ppm, true, scheduler.SignalValid, scheduler.SignalValid)
	require.NoError(t, err)
	return p
}

func stale(t testing.TB) scheduler.Pressure {
	t.Helper()
	p, err := scheduler.NewPressure(scheduler.FreshnessStale, 0, false, scheduler.SignalValid, scheduler.SignalMissing)
	require.NoError(t, err)
	return p
}

// rank builds a real decision the way admission does.
func rank(t testing.TB, cursor int, ms ...member) scheduler.Decision {
	t.Helper()
	cands := make([]scheduler.Candidate, len(ms))
	for i, m := range ms {
		c, err := scheduler.NewCandidate(m.id, m.eligible, m.active, m.capacity, m.pressure)
		require.NoError(t, err)
		cands[i] = c
	}
	d, err := scheduler.Rank(cands, cursor)
	require.NoError(t, err)
	return d
}

// threeMembers is a capacity tier of m1..m3 (ceiling 4) where m1 wins on local load,
// m2 is unknown upstream and m3 is not eligible: eligible {m1, m2}.
func threeMembers(t testing.TB) scheduler.Decision {
	return rank(t, 0,
		member{"m1", true, 0, 4, fresh(t, 250_000)},
		member{"m2", true, 1, 4, scheduler.UnknownPressure()},
		member{"m3", false, 0, 4, fresh(t, 0)},
	)
}

func membership3() map[string]int64 { return map[string]int64{"m1": 4, "m2": 4, "m3": 4} }

func capacityRecord(t testing.TB) Record {
	d := threeMembers(t)
	return Record{
		RequestID: "req-cap-1", Alias: "chat", Tier: "pool", Member: "m1",
		Route: RouteReplica, Strategy: StrategyCapacity, Outcome: OutcomeSuccess,
		Attempts: 1, Status: 200, Start: t0, Duration: 1234567 * time.Nanosecond,
		FirstByte: 234567 * time.Nanosecond, ReplicaScheduler: &d,
	}
}

func directRecord() Record {
	return Record{
		RequestID: "req-direct-1", Alias: "embed", Tier: "solo", Route: RouteDirect,
		Outcome: OutcomeSuccess, Attempts: 1, Status: 200, Start: t0.Add(time.Second),
		Duration: 42 * time.Millisecond, FirstByte: 40 * time.Millisecond,
	}
}

func roundRobinRecord() Record {
	return Record{
		RequestID: "req-rr-1", Alias: "meta-llama/llama-3.1-8b:instruct", Tier: "rr-pool", Member: "r2",
		Route: RouteReplica, Strategy: StrategyRoundRobin, Outcome: OutcomeUpstreamHTTPError,
		Attempts: 1, Status: 503, Start: t0.Add(2 * time.Second), Duration: 7 * time.Millisecond,
		FirstByte: 7 * time.Millisecond,
	}
}

func refusedRecord() Record {
	return Record{
		RequestID: "req-refused-1", Outcome: OutcomeRefused, Status: 404, Start: t0.Add(3 * time.Second),
		Duration: 90 * time.Microsecond,
	}
}

func notAdmittedRecord() Record {
	return Record{
		RequestID: "req-full-1", Alias: "chat", Tier: "pool", Route: RouteReplica,
		Strategy: StrategyCapacity, Outcome: OutcomeNotAdmitted, Status: 503,
		Start: t0.Add(4 * time.Second), Duration: 30 * time.Microsecond,
	}
}

// sampleRecords covers every route kind, evidence kept and discarded, and sanitized IDs.
func sampleRecords(t testing.TB) []Record {
	misplaced := threeMembers(t)
	sanitized := roundRobinRecord()
	sanitized.RequestID = "abc def"
	sanitized.CallerRequestID = "tok en" // dropped, not marked
	sanitized.Alias = "http://10.0.0.1:8000/v1"
	sanitized.Member = "R2"
	sanitized.ReplicaScheduler = &misplaced // round robin never carries evidence
	direct := directRecord()
	direct.CallerRequestID = "caller-trace-7"
	direct.Usage = Usage{Prompt: 7, Reported: true} // an embedding: no completion tokens
	reported := capacityRecord(t)
	reported.Usage = Usage{Prompt: 12, Completion: 34, Reported: true}
	return []Record{reported, direct, roundRobinRecord(), refusedRecord(),
		notAdmittedRecord(), sanitized}
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from golden (run with -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func mustLog(t testing.TB, ring int, sink *bytes.Buffer, opts ...Option) *Log {
	t.Helper()
	var l *Log
	var err error
	if sink == nil {
		l, err = New(ring, nil, opts...)
	} else {
		l, err = New(ring, sink, opts...)
	}
	require.NoError(t, err)
	return l
}
