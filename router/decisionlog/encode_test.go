package decisionlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

func TestGoldenJSONL(t *testing.T) {
	var sink bytes.Buffer
	l := mustLog(t, 16, &sink)
	for _, r := range sampleRecords(t) {
		require.NoError(t, l.Add(r))
	}
	for _, line := range bytes.SplitAfter(sink.Bytes(), []byte("\n")) {
		if len(line) > 0 {
			assert.True(t, json.Valid(line), "invalid json: %s", line)
		}
	}
	golden(t, "records.jsonl", sink.Bytes())
}

func TestGoldenLine(t *testing.T) {
	var b strings.Builder
	for _, r := range sampleRecords(t) {
		b.WriteString(r.Line())
		b.WriteByte('\n')
	}
	golden(t, "records.lines", []byte(b.String()))
}

func TestLineSchedulerSuffix(t *testing.T) {
	valid := capacityRecord(t)
	suffix := " replica_scheduler=capacity replica_scheduler_reason=selected replica_eligible_count=2"
	assert.True(t, strings.HasSuffix(valid.Line(), suffix), valid.Line())

	withoutEvidence := valid
	withoutEvidence.ReplicaScheduler = nil
	assert.Equal(t, withoutEvidence.Line()+suffix, valid.Line(), "the suffix is the only difference")

	var zero scheduler.Decision // a no-eligible decision cannot explain a selection
	malformed := valid
	malformed.ReplicaScheduler = &zero
	assert.Equal(t, withoutEvidence.Line(), malformed.Line(), "malformed evidence must not erase the pair")

	other := valid
	other.Member = "m2"
	assert.NotContains(t, other.Line(), "replica_scheduler")
	assert.Contains(t, other.Line(), " member=m2 ")
}

// The fields added after the spec's line (the config digest, the caller's ID and label, the usage)
// leave a record's line byte for byte what it was without them: legacy bytes unchanged.
func TestLineKeepsLegacyBytes(t *testing.T) {
	for _, legacy := range []Record{capacityRecord(t), sampleRecords(t)[0]} {
		legacy.ConfigDigest, legacy.CallerRequestID, legacy.Caller, legacy.Usage = "", "", "", Usage{}
		extended := legacy
		extended.ConfigDigest = "0123456789abcdef"
		extended.CallerRequestID = "trace-1"
		extended.Caller = "team-a"
		extended.Usage = Usage{Prompt: 12, Completion: 34, Reported: true}
		assert.Equal(t, legacy.Line(), extended.Line())
		js, err := extended.JSON()
		require.NoError(t, err)
		for _, f := range []string{`"config_digest":"0123456789abcdef"`, `"caller_request_id":"trace-1"`, `"caller":"team-a"`, `"prompt_tokens":12`} {
			assert.Contains(t, string(js), f, "the JSON keeps what the line leaves out")
		}
	}
}

func TestLineInvalidRecord(t *testing.T) {
	r := capacityRecord(t)
	r.Outcome = "exploded: at 10.0.0.1"
	r.Route = "somewhere"
	r.Strategy = "x y"
	r.Attempts = 7
	line := r.Line()
	assert.Contains(t, line, " route=-invalid- strategy=-invalid- outcome=-invalid- attempts=7 ")
	assert.NotContains(t, line, "replica_scheduler", "evidence needs a valid record")
	assert.NotContains(t, line, "10.0.0.1")
}

func TestMillis(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0.000"},
		{999 * time.Nanosecond, "0.000"},
		{time.Microsecond, "0.001"},
		{1234567 * time.Nanosecond, "1.234"},
		{42 * time.Millisecond, "42.000"},
		{-1500 * time.Microsecond, "-1.500"},
		{MaxDuration, "9007199254.740"},
	} {
		assert.Equal(t, tc.want, millis(tc.d), "%d", tc.d)
	}
}

// worstCase is the longest valid record: maximal IDs and 16 score rows with the widest
// numbers the scheduler accepts.
func worstCase(t testing.TB) Record {
	ms := make([]member, ident.MaxMembers)
	for i := range ms {
		id := strings.Repeat("m", ident.MaxIDLength-2) + string(rune('a'+i)) + "x"
		ms[i] = member{id, true, 99_999, ident.MaxCeiling, fresh(t, scheduler.MaxPressurePPM)}
	}
	d := rank(t, 0, ms...)
	sel, _ := d.SelectedMemberID()
	return Record{
		RequestID: strings.Repeat("R", ident.MaxRequestIDLength), Alias: strings.Repeat("a", ident.MaxAliasLength),
		Tier: strings.Repeat("t", ident.MaxIDLength), Member: sel, Route: RouteReplica,
		Strategy: StrategyCapacity, Outcome: OutcomeUpstreamTransportError, Attempts: 1, Status: 502,
		Start: t0, Duration: MaxDuration, FirstByte: MaxDuration, Queued: MaxDuration, ReplicaScheduler: &d,
		ConfigDigest: strings.Repeat("f", ConfigDigestLen), CallerRequestID: strings.Repeat("C", ident.MaxRequestIDLength),
		Caller: strings.Repeat("c", ident.MaxIDLength), TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
	}
}

func TestDefaultLineBoundHoldsEveryValidRecord(t *testing.T) {
	r := worstCase(t)
	n, err := normalize(r)
	require.NoError(t, err)
	require.NotNil(t, n.rec.ReplicaScheduler)
	line := appendJSON(nil, &n.rec)
	assert.Less(t, len(line), ident.MaxLineBytes)
	assert.Greater(t, len(line), 4000, "the worst case really is large")
}

// TestRecordJSONIsTheSinkLine: Record.JSON writes exactly the sink's line (without its newline) for
// every sample record, sanitizing as Add does, and refuses a record that breaks an invariant.
func TestRecordJSONIsTheSinkLine(t *testing.T) {
	for i, r := range sampleRecords(t) {
		t.Run(r.RequestID, func(t *testing.T) {
			var sink bytes.Buffer
			l := mustLog(t, 4, &sink)
			require.NoError(t, l.Add(r))
			require.NoError(t, l.Flush())
			got, err := r.JSON()
			require.NoError(t, err, "record %d", i)
			assert.Equal(t, strings.TrimSuffix(sink.String(), "\n"), string(got))
			back, err := ReadJSONL(bytes.NewReader(append(got, '\n')), 1)
			require.NoError(t, err, "JSON reads back strictly")
			require.Len(t, back, 1)
		})
	}
	t.Run("invalid record", func(t *testing.T) {
		bad := capacityRecord(t)
		bad.Attempts = 2
		got, err := bad.JSON()
		require.ErrorIs(t, err, ErrInvalidRecord)
		assert.Nil(t, got)
	})
	t.Run("markup in an ID is sanitized, never written", func(t *testing.T) {
		r := capacityRecord(t)
		r.Member = `<img src=x onerror=alert(1)>`
		r.ReplicaScheduler = nil
		got, err := r.JSON()
		require.NoError(t, err)
		assert.NotContains(t, string(got), "<")
		assert.Contains(t, string(got), `"member":"`+InvalidMarker+`"`)
	})
}
