package decisionlog

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func summaryRecords(t *testing.T) []Record {
	recs := sampleRecords(t)
	// A stale winner with a one-member eligible set: m2 is at its ceiling.
	d := rank(t, 1,
		member{"m1", true, 3, 4, stale(t)},
		member{"m2", true, 4, 4, fresh(t, 0)},
		member{"m3", false, 0, 4, fresh(t, 0)},
	)
	r := capacityRecord(t)
	r.RequestID, r.Duration, r.ReplicaScheduler = "req-cap-2", 9*time.Millisecond, &d
	second := capacityRecord(t)
	second.RequestID, second.Duration = "req-cap-3", 3*time.Millisecond
	r.Caller = "team-a"
	broken := directRecord()
	broken.Attempts = 3
	return append(recs, r, second, broken)
}

// TestSummarizePerCaller: issue 27 asks for the token totals per caller label too. Records without a
// caller count under "" (printed "-", which no label can be: labels start with a letter or digit).
func TestSummarizePerCaller(t *testing.T) {
	recs := summaryRecords(t)
	var labelled []Record
	for i, r := range recs {
		switch i % 3 {
		case 0:
			r.Caller = "team-b"
		case 1:
			r.Caller = "team-a"
		}
		labelled = append(labelled, r)
	}
	s := Summarize(labelled)
	require.Len(t, s.Callers, 3)
	assert.Equal(t, []string{"", "team-a", "team-b"},
		[]string{s.Callers[0].Caller, s.Callers[1].Caller, s.Callers[2].Caller}, "sorted labels")
	var sum UsageSummary
	records := 0
	for _, c := range s.Callers {
		records += c.Records
		sum.PromptTokens += c.Usage.PromptTokens
		sum.CompletionTokens += c.Usage.CompletionTokens
		sum.Reported += c.Usage.Reported
		sum.Unknown += c.Usage.Unknown
	}
	assert.Equal(t, s.Records, records, "every summarized record counts under exactly one caller")
	assert.Equal(t, s.Usage, sum, "the callers' totals add up to the file's")
	assert.Contains(t, s.Text(), "caller team-a records=")
	assert.Contains(t, s.Text(), "caller - records=")
}

func TestSummaryGolden(t *testing.T) {
	s := Summarize(summaryRecords(t))
	golden(t, "summary.txt", []byte(s.Text()))
	js, err := json.MarshalIndent(s, "", "  ")
	require.NoError(t, err)
	golden(t, "summary.json", append(js, '\n'))
}

func TestSummarizeCounts(t *testing.T) {
	s := Summarize(summaryRecords(t))
	assert.Equal(t, 8, s.Records)
	assert.Equal(t, 1, s.Skipped)
	assert.Equal(t, 6, s.Admitted)
	assert.Equal(t, 6, s.Attempts, "one attempt per admitted request")
	assert.Equal(t, []Count{{"2xx", 4}, {"4xx", 1}, {"5xx", 3}}, s.Statuses)
	require.Len(t, s.Tiers, 4)
	assert.Equal(t, []string{"", "pool", "rr-pool", "solo"},
		[]string{s.Tiers[0].Tier, s.Tiers[1].Tier, s.Tiers[2].Tier, s.Tiers[3].Tier}, "sorted tiers")
	pool := s.Tiers[1]
	assert.Equal(t, 4, pool.Records)
	assert.Equal(t, 3, pool.Attempts)
	assert.Equal(t, []Count{{"not_admitted", 1}, {"success", 3}}, pool.Outcomes)
	require.Len(t, pool.Members, 1)
	poolUsage := UsageSummary{PromptTokens: 12, CompletionTokens: 34, Reported: 1, Unknown: 2}
	assert.Equal(t, MemberSummary{Member: "m1", Records: 3, Attempts: 3, Outcomes: []Count{{"success", 3}}, Usage: poolUsage}, pool.Members[0])
	assert.Equal(t, poolUsage, pool.Usage)
	// The members' own counts add up; the two round-robin attempts reported none: unknown, not zero.
	assert.Equal(t, UsageSummary{PromptTokens: 19, CompletionTokens: 34, Reported: 2, Unknown: 4}, s.Usage)
	assert.Equal(t, UsageSummary{Unknown: 2}, s.Tiers[2].Usage)
	require.NotNil(t, pool.Scheduler)
	assert.Equal(t, 3, pool.Scheduler.Decisions)
	assert.Equal(t, []Count{{"fresh", 2}, {"stale", 1}}, pool.Scheduler.SelectedFreshness)
	assert.Equal(t, []SizeCount{{1, 1}, {2, 2}}, pool.Scheduler.EligibleSizes)
	rr := s.Tiers[2]
	assert.Nil(t, rr.Scheduler, "round robin never has scheduler evidence")
	assert.Equal(t, []string{InvalidMarker, "r2"}, []string{rr.Members[0].Member, rr.Members[1].Member})
}

func TestSummarizeIsOrderIndependent(t *testing.T) {
	recs := summaryRecords(t)
	want := Summarize(recs).Text()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		assert.Equal(t, want, Summarize(recs).Text())
	}
}

func TestSummarizeEmpty(t *testing.T) {
	s := Summarize(nil)
	js, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, `{"records":0,"skipped":0,"admitted":0,"attempts":0,"outcomes":[],"status_classes":[],
		"duration":{"n":0,"p50_ns":0,"p99_ns":0},"tiers":[],"callers":[],
		"usage":{"prompt_tokens":0,"completion_tokens":0,"reported":0,"unknown":0}}`, string(js))
	assert.Equal(t, "records=0 skipped=0 admitted=0 attempts=0\noutcomes:\nstatus:\nattempt_duration: p50_ms=0.000 p99_ms=0.000\n"+
		"usage: prompt_tokens=0 completion_tokens=0 reported=0 unknown=0\n", s.Text())
}

func TestQuantilesNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100 - i) // reversed: quantiles must sort a copy
	}
	assert.Equal(t, Quantiles{N: 100, P50: 50, P99: 99}, quantiles(hundred))
	assert.Equal(t, time.Duration(100), hundred[0], "the input is not reordered")
	assert.Equal(t, Quantiles{N: 1, P50: 7, P99: 7}, quantiles([]time.Duration{7}))
	assert.Equal(t, Quantiles{N: 2, P50: 1, P99: 2}, quantiles([]time.Duration{2, 1}))
	assert.Equal(t, Quantiles{}, quantiles(nil))
}
