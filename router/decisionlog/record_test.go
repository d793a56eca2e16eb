package decisionlog

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAddRefusesBrokenInvariants(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Record)
		want string
	}{
		{"undefined route", func(r *Record) { r.Route = "sideways" }, "route: invalid value"},
		{"undefined strategy", func(r *Record) { r.Strategy = "random" }, "strategy: invalid value"},
		{"undefined outcome", func(r *Record) { r.Outcome = "boom" }, "outcome: invalid value"},
		{"empty outcome", func(r *Record) { r.Outcome = "" }, "outcome: invalid value"},
		{"attempts 2", func(r *Record) { r.Attempts = 2 }, "attempts: invalid value"},
		{"attempts -1", func(r *Record) { r.Attempts = -1 }, "attempts: invalid value"},
		{"status 99", func(r *Record) { r.Status = 99 }, "status: invalid value"},
		{"status 600", func(r *Record) { r.Status = 600 }, "status: invalid value"},
		{"zero start", func(r *Record) { r.Start = time.Time{} }, "start: invalid value"},
		{"start year 10000", func(r *Record) { r.Start = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "start: invalid value"},
		{"negative duration", func(r *Record) { r.Duration = -1 }, "duration_ns: invalid value"},
		{"huge duration", func(r *Record) { r.Duration = MaxDuration + 1 }, "duration_ns: invalid value"},
		{"negative first byte", func(r *Record) { r.FirstByte = -1 }, "first_byte_ns: invalid value"},
		{"success without attempt", func(r *Record) { r.Attempts = 0 }, "attempts: inconsistent with other fields"},
		{"refused with attempt", func(r *Record) { r.Outcome = OutcomeRefused }, "attempts: inconsistent with other fields"},
		{"direct with member", func(r *Record) { r.Member = "m1" }, "member: inconsistent with other fields"},
		{"direct with strategy", func(r *Record) { r.Strategy = StrategyRoundRobin }, "strategy: inconsistent with other fields"},
		{"direct without tier", func(r *Record) { r.Tier = "" }, "tier: inconsistent with other fields"},
		{"replica without strategy", func(r *Record) { r.Route = RouteReplica; r.Member = "m1" }, "strategy: inconsistent with other fields"},
		{"replica attempt without member", func(r *Record) { r.Route = RouteReplica; r.Strategy = StrategyCapacity }, "member: inconsistent with other fields"},
		{"replica without tier", func(r *Record) {
			r.Route, r.Strategy, r.Member, r.Tier = RouteReplica, StrategyCapacity, "m1", ""
		}, "tier: inconsistent with other fields"},
		{"unrouted with tier", func(r *Record) { r.Route = RouteNone; r.Attempts = 0; r.Outcome = OutcomeRefused }, "tier: inconsistent with other fields"},
		{"unrouted with attempt", func(r *Record) { r.Route = RouteNone; r.Tier = "" }, "attempts: inconsistent with other fields"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sink bytes.Buffer
			l := mustLog(t, 4, &sink)
			r := directRecord()
			tc.edit(&r)
			err := l.Add(r)
			require.ErrorIs(t, err, ErrInvalidRecord)
			assert.Equal(t, "decisionlog: invalid record: "+tc.want, err.Error())
			assert.Empty(t, l.Recent(1))
			assert.Zero(t, sink.Len())
			assert.Equal(t, uint64(1), l.Stats().Rejected)
		})
	}
}

func TestAcceptedEdgeRecords(t *testing.T) {
	canceledBefore := capacityRecord(t)
	canceledBefore.Outcome, canceledBefore.Attempts, canceledBefore.Status = OutcomeClientCanceled, 0, 0
	canceledAfter := roundRobinRecord()
	canceledAfter.Outcome = OutcomeClientCanceled
	unrouted := refusedRecord()
	unrouted.Outcome = OutcomeClientCanceled
	l := mustLog(t, 8, nil)
	for _, r := range []Record{canceledBefore, canceledAfter, unrouted, notAdmittedRecord()} {
		assert.NoError(t, l.Add(r))
	}
	assert.NotNil(t, l.Recent(4)[0].ReplicaScheduler, "a canceled selection keeps its captured evidence")
}

// TestInternalErrorRecords: a panic after admission is recorded as internal_error with its true
// attempt count (0 before the relay started, 1 during it), its status and the captured selection,
// and the record goes through every surface: the ring, the JSONL line, strict ingestion, the summary.
func TestInternalErrorRecords(t *testing.T) {
	beforeRelay := capacityRecord(t)
	beforeRelay.RequestID, beforeRelay.Outcome, beforeRelay.Attempts, beforeRelay.Status = "req-panic-0", OutcomeInternalError, 0, 500
	beforeRelay.FirstByte = 0
	duringRelay := capacityRecord(t)
	duringRelay.RequestID, duringRelay.Outcome, duringRelay.Status = "req-panic-1", OutcomeInternalError, 200
	direct := directRecord()
	direct.RequestID, direct.Outcome, direct.Status = "req-panic-2", OutcomeInternalError, 500
	var sink bytes.Buffer
	l := mustLog(t, 8, &sink)
	for _, r := range []Record{beforeRelay, duringRelay, direct} {
		require.NoError(t, l.Add(r))
	}
	stored := l.Recent(3)
	for _, r := range stored[:2] {
		require.NotNil(t, r.ReplicaScheduler, "the captured selection survives a panic")
		assert.Equal(t, "m1", r.Member)
	}
	assert.Contains(t, stored[0].Line(), "outcome=internal_error attempts=0 status=500")
	assert.Contains(t, stored[1].Line(), "outcome=internal_error attempts=1 status=200")
	assert.Contains(t, stored[1].Line(), "replica_scheduler=capacity")

	back, err := ReadJSONL(bytes.NewReader(sink.Bytes()), 8)
	require.NoError(t, err)
	assert.Equal(t, stored, back, "strict ingestion reads internal_error back")
	sum := Summarize(back)
	assert.Equal(t, 3, sum.Admitted)
	assert.Equal(t, 2, sum.Attempts)
	assert.Equal(t, []Count{{"internal_error", 3}}, sum.Outcomes)

	tooMany := capacityRecord(t)
	tooMany.Outcome, tooMany.Attempts = OutcomeInternalError, 2
	assert.ErrorIs(t, l.Add(tooMany), ErrInvalidRecord, "still at most one attempt")
}

func TestIDsAreSanitized(t *testing.T) {
	l := mustLog(t, 4, nil)
	r := roundRobinRecord()
	r.RequestID = ""
	r.Tier = "Pool"
	r.Member = "m1:8000"
	r.Alias = "chat model"
	require.NoError(t, l.Add(r))
	got := l.Recent(1)[0]
	assert.Equal(t, InvalidMarker, got.RequestID, "an empty request ID is invalid")
	assert.Equal(t, InvalidMarker, got.Tier)
	assert.Equal(t, InvalidMarker, got.Member)
	assert.Equal(t, InvalidMarker, got.Alias)
	assert.Equal(t, uint64(4), l.Stats().IDsReplaced)

	empty := refusedRecord()
	require.NoError(t, l.Add(empty))
	assert.Equal(t, "", l.Recent(1)[0].Alias, "empty optional IDs mean none")
}

// sensitive are strings that must never reach any surface: URLs, addresses,
// credentials, prompts, bodies, raw metrics and raw errors.
var sensitive = []string{
	"http://10.1.2.3:8000/v1/chat/completions",
	"https://api.example.com",
	"10.1.2.3:8000",
	"10.1.2.3",
	"[::1]:9000",
	"fe80::1",
	"Bearer sk-secret-token",
	"Authorization: Basic dXNlcjpwYXNz",
	"Tell me a story about dragons",
	`{"messages":[{"role":"user","content":"hi"}]}`,
	`vllm:num_requests_running{model_name="m"} 3`,
	"dial tcp 10.1.2.3:8000: connect: connection refused",
	"context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
	"user@example.com",
}

func TestNoSensitiveStringReachesAnySurface(t *testing.T) {
	var sink bytes.Buffer
	l := mustLog(t, 128, &sink)
	var lines strings.Builder
	var all []Record
	for _, s := range sensitive {
		for field := range 5 {
			r := capacityRecord(t)
			switch field {
			case 0:
				r.RequestID = s
			case 1:
				r.Alias = s
			case 2:
				r.Tier = s
			case 3:
				r.Member = s // also breaks the evidence pairing
			case 4:
				r.CallerRequestID = s
			}
			require.NoError(t, l.Add(r))
			lines.WriteString(r.Line() + "\n")
			all = append(all, r)
		}
	}
	sum := Summarize(all)
	sumJSON, err := json.Marshal(sum)
	require.NoError(t, err)
	var recent strings.Builder
	for _, r := range l.Recent(128) {
		recent.WriteString(strings.Join([]string{r.RequestID, r.CallerRequestID, r.Alias, r.Tier, r.Member,
			string(r.Route), string(r.Strategy), string(r.Outcome)}, " ") + "\n")
	}
	surfaces := map[string]string{
		"sink": sink.String(), "line": lines.String(), "recent": recent.String(),
		"summary text": sum.Text(), "summary json": string(sumJSON),
	}
	for name, text := range surfaces {
		for _, s := range sensitive {
			assert.NotContains(t, text, s, "surface %s", name)
		}
		for _, frag := range []string{"://", "10.1.2.3", "Bearer", "sk-secret", "dragons", "refused", "deadline"} {
			if frag == "refused" { // an outcome name; only the raw error text is forbidden
				continue
			}
			assert.NotContains(t, text, frag, "surface %s", name)
		}
	}
	assert.Equal(t, uint64(len(sensitive)*5), l.Stats().IDsReplaced)
	assert.Equal(t, uint64(len(sensitive)), l.Stats().EvidenceDiscarded, "member changes discard evidence")
}

// TestRecordCarriesNoFreeText pins the field set: a new string field would need its
// own grammar before it could be added.
func TestRecordCarriesNoFreeText(t *testing.T) {
	r := capacityRecord(t)
	r.EjectedMembers = 1
	r.Queued = r.Duration
	r.ConfigDigest = "0123456789abcdef"
	r.CallerRequestID = "trace-1"
	r.Caller = "team-a" // in the ID grammar (ident.ValidID)
	r.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	r.Usage = Usage{Prompt: 1, Completion: 2, Reported: true}
	n, err := normalize(r)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(appendJSON(nil, &n.rec), &m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	want := recordKeys()
	assert.ElementsMatch(t, want[:], keys)
}

// TestConfigDigest: the digest of the admitting configuration is written before the evidence, read
// back by ingestion, absent when empty (the simulator's records are unchanged) and refused
// unless it is 16 lowercase hex digits.
func TestConfigDigest(t *testing.T) {
	var sink bytes.Buffer
	l := mustLog(t, 8, &sink)
	r := capacityRecord(t)
	r.ConfigDigest = "0123456789abcdef"
	require.NoError(t, l.Add(r))
	assert.Contains(t, sink.String(), `,"config_digest":"0123456789abcdef","replica_scheduler":`)
	assert.NotContains(t, r.Line(), "config_digest", "the line keeps its legacy bytes")
	recs, err := ReadJSONL(bytes.NewReader(sink.Bytes()), 1)
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef", recs[0].ConfigDigest)
	bad := strings.Replace(sink.String(), `"config_digest":"0123456789abcdef"`, `"config_digest":"0123456789ABCDEF"`, 1)
	_, err = ReadJSONL(strings.NewReader(bad), 1)
	require.Error(t, err, "ingestion refuses a malformed digest")

	r.ConfigDigest = ""
	assert.NotContains(t, r.Line(), "config_digest")
	b, err := r.JSON()
	require.NoError(t, err)
	assert.NotContains(t, string(b), "config_digest", "absent without a file: legacy bytes unchanged")
	for _, bad := range []string{"0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0", "0123456789abcdeg"} {
		r.ConfigDigest = bad
		assert.ErrorIs(t, l.Add(r), ErrInvalidRecord, bad)
	}
}

func TestEjectedMembers(t *testing.T) {
	var sink bytes.Buffer
	l := mustLog(t, 8, &sink)
	r := capacityRecord(t)
	r.EjectedMembers = 2
	require.NoError(t, l.Add(r))
	assert.Contains(t, sink.String(), `"first_byte_ns":`+strconv.FormatInt(int64(r.FirstByte), 10)+`,"ejected_members":2,"replica_scheduler":`)
	assert.Contains(t, r.Line(), " ejected_members=2 replica_scheduler=capacity")
	recs, err := ReadJSONL(bytes.NewReader(sink.Bytes()), 1)
	require.NoError(t, err)
	assert.Equal(t, 2, recs[0].EjectedMembers)

	r.EjectedMembers = 0
	assert.NotContains(t, r.Line(), "ejected", "absent when nothing was ejected: legacy bytes unchanged")
	for _, bad := range []int{-1, 16} {
		r.EjectedMembers = bad
		assert.ErrorIs(t, l.Add(r), ErrInvalidRecord)
	}
	d := directRecord()
	d.EjectedMembers = 1
	assert.ErrorIs(t, l.Add(d), ErrInvalidRecord, "only replica tiers have members to eject")

	line := strings.TrimSuffix(sink.String(), "\n")
	for _, c := range []struct{ name, line string }{
		{"zero written out", strings.Replace(line, `"ejected_members":2`, `"ejected_members":0`, 1)},
		{"sixteen", strings.Replace(line, `"ejected_members":2`, `"ejected_members":16`, 1)},
		{"string", strings.Replace(line, `"ejected_members":2`, `"ejected_members":"2"`, 1)},
		{"duplicate", strings.Replace(line, `"ejected_members":2`, `"ejected_members":2,"ejected_members":2`, 1)},
	} {
		_, err := ReadJSONL(strings.NewReader(c.line+"\n"), 1)
		assert.Error(t, err, c.name)
	}
}

func TestQueued(t *testing.T) {
	var sink bytes.Buffer
	l := mustLog(t, 8, &sink)
	r := directRecord()
	r.Queued = r.Duration / 2
	require.Positive(t, r.Queued)
	require.NoError(t, l.Add(r))
	assert.Contains(t, sink.String(), `,"queued_ns":`+strconv.FormatInt(int64(r.Queued), 10)+"}")
	assert.Contains(t, r.Line(), " queued_ms=")
	recs, err := ReadJSONL(bytes.NewReader(sink.Bytes()), 1)
	require.NoError(t, err)
	assert.Equal(t, r.Queued, recs[0].Queued)
	r.Queued = 0
	assert.NotContains(t, r.Line(), "queued", "absent when the request did not queue")
	r.Queued = r.Duration + 1
	assert.ErrorIs(t, l.Add(r), ErrInvalidRecord, "queueing is part of the request's duration")
	line := strings.TrimSuffix(sink.String(), "\n")
	_, err = ReadJSONL(strings.NewReader(strings.Replace(line, `"queued_ns":`, `"queued_ns":0,"x":`, 1)+"\n"), 1)
	assert.Error(t, err)
}
