package decisionlog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// capLine is the canonical line of capacityRecord (see testdata/records.jsonl).
const capLine = `{"request_id":"req-cap-1","start":"2025-03-04T05:06:07.123456789Z","alias":"chat","tier":"pool","member":"m1","route":"replica","strategy":"capacity","outcome":"success","attempts":1,"status":200,"duration_ns":1234567,"first_byte_ns":234567,"replica_scheduler":{"selected_member_id":"m1","reason":"selected","eligible_member_ids":["m1","m2"],"scores":[{"member_id":"m1","local_active":0,"local_capacity":4,"upstream_unknown":false,"upstream_pressure_ppm":250000,"freshness":"fresh","rotating_rank":0},{"member_id":"m2","local_active":1,"local_capacity":4,"upstream_unknown":true,"upstream_pressure_ppm":null,"freshness":"unknown","rotating_rank":1}]}}`

const score0 = `{"member_id":"m1","local_active":0,"local_capacity":4,"upstream_unknown":false,"upstream_pressure_ppm":250000,"freshness":"fresh","rotating_rank":0}`

// withCallerID is capLine with caller_request_id set to the JSON value v, in its canonical place.
func withCallerID(t *testing.T, v string) string {
	return edit(t, `,"replica_scheduler":`, `,"caller_request_id":`+v+`,"replica_scheduler":`) + "\n"
}

// edit replaces exactly one occurrence of old in capLine.
func edit(t *testing.T, old, new string) string {
	t.Helper()
	require.Equal(t, 1, strings.Count(capLine, old), "fixture %q", old)
	return strings.Replace(capLine, old, new, 1)
}

func TestReadJSONLRoundTrip(t *testing.T) {
	var first bytes.Buffer
	l := mustLog(t, 16, &first)
	for _, r := range sampleRecords(t) {
		require.NoError(t, l.Add(r))
	}
	recs, err := ReadJSONL(bytes.NewReader(first.Bytes()), 16)
	require.NoError(t, err)
	assert.Equal(t, l.Recent(16), recs, "ingestion reconstitutes exactly what was stored")

	var second bytes.Buffer
	l2 := mustLog(t, 16, &second)
	for _, r := range recs {
		require.NoError(t, l2.Add(r))
	}
	assert.Equal(t, first.String(), second.String(), "byte-identical through the writer")
	assert.Equal(t, uint64(0), l2.Stats().EvidenceDiscarded+l2.Stats().IDsReplaced)

	golden, err := os.ReadFile(filepath.Join("testdata", "records.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, string(golden), first.String())
}

// TestReadJSONLCallerRequestID: the optional correlation field is read by both parsers, kept exactly
// and written back in its place; the record's own request_id is untouched by it.
func TestReadJSONLCallerRequestID(t *testing.T) {
	line := withCallerID(t, `"Trace_ID-9.x"`)
	recs, err := ReadJSONL(strings.NewReader(line), 1)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, "Trace_ID-9.x", recs[0].CallerRequestID)
	assert.Equal(t, "req-cap-1", recs[0].RequestID)
	fast, ok := scanCanonical([]byte(strings.TrimSuffix(line, "\n")))
	require.True(t, ok, "the fast path reads the field")
	assert.Equal(t, recs[0].CallerRequestID, fast.CallerRequestID)
	js, err := recs[0].JSON()
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(line, "\n"), string(js))
	assert.NotContains(t, recs[0].Line(), "caller_request_id", "the line keeps its legacy bytes")
}

// TestReadJSONLCaller: the optional caller label is read by both parsers, in its canonical place
// (after caller_request_id), written back there and shown in the line; out of the ID grammar, empty,
// the marker or out of place, it is refused with a fixed error.
func TestReadJSONLCaller(t *testing.T) {
	line := edit(t, `,"replica_scheduler":`, `,"caller_request_id":"t-1","caller":"team-a","replica_scheduler":`) + "\n"
	recs, err := ReadJSONL(strings.NewReader(line), 1)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, "team-a", recs[0].Caller)
	fast, ok := scanCanonical([]byte(strings.TrimSuffix(line, "\n")))
	require.True(t, ok, "the fast path reads the field")
	assert.Equal(t, "team-a", fast.Caller)
	js, err := recs[0].JSON()
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(line, "\n"), string(js))
	assert.NotContains(t, recs[0].Line(), "caller", "the line keeps its legacy bytes")
	for name, tc := range map[string]struct {
		value string
		want  error
	}{
		"upper case": {`"Team-A"`, ErrInvalidValue}, "address": {`"10.0.0.1"`, ErrInvalidValue},
		"empty": {`""`, ErrInvalidValue}, "marker": {`"-invalid-"`, ErrInvalidValue},
		"number": {`7`, ErrWrongType}, "too long": {`"` + strings.Repeat("a", 65) + `"`, ErrInvalidValue},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadJSONL(strings.NewReader(edit(t, `,"replica_scheduler":`, `,"caller":`+tc.value+`,"replica_scheduler":`)+"\n"), 1)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, err = ReadJSONL(strings.NewReader(edit(t, `,"replica_scheduler":`, `,"caller":"a","caller_request_id":"t","replica_scheduler":`)+"\n"), 1)
	assert.ErrorIs(t, err, ErrNotCanonical, "out of place")
}

// TestAddDropsACallerOutOfGrammar: Log.Add keeps a valid caller label and drops (never marks) one
// out of the ID grammar.
func TestAddDropsACallerOutOfGrammar(t *testing.T) {
	for in, want := range map[string]string{"team-a": "team-a", "Team A": "", "10.0.0.1": "", "": ""} {
		r := sampleRecords(t)[0]
		r.Caller = in
		js, err := r.JSON()
		require.NoError(t, err)
		if want == "" {
			assert.NotContains(t, string(js), `"caller":`, in)
		} else {
			assert.Contains(t, string(js), `"caller":"`+want+`"`, in)
		}
	}
}

func TestReadJSONLEmptyInput(t *testing.T) {
	recs, err := ReadJSONL(strings.NewReader(""), 1)
	assert.NoError(t, err)
	assert.Empty(t, recs)
}

func TestReadJSONLLimit(t *testing.T) {
	for _, n := range []int{0, -1, MaxReadRecords + 1} {
		_, err := ReadJSONL(strings.NewReader(capLine+"\n"), n)
		assert.ErrorIs(t, err, ErrLimit, "%d", n)
	}
	_, err := ReadJSONL(strings.NewReader(strings.Repeat(capLine+"\n", 3)), 2)
	assert.EqualError(t, err, "decisionlog: line 3: too many records")
	assert.ErrorIs(t, err, ErrTooManyRecords)
	recs, err := ReadJSONL(strings.NewReader(strings.Repeat(capLine+"\n", 3)), 3)
	assert.NoError(t, err)
	assert.Len(t, recs, 3)
}

type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

func TestReadJSONLReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ReadJSONL(&failingReader{strings.NewReader(capLine + "\n" + `{"req`), boom}, 10)
	assert.EqualError(t, err, "decisionlog: line 2: read failed: boom")
	assert.ErrorIs(t, err, ErrRead)
	assert.ErrorIs(t, err, boom)
	var le *LineError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 2, le.Line)
}

func TestReadJSONLRejections(t *testing.T) {
	seventeenIDs := `["m1"` + strings.Repeat(`,"m1"`, 16) + `]`
	seventeenScores := `[` + score0 + strings.Repeat(","+score0, 15) + `,{}]`
	cases := []struct {
		name, input, want string
		sentinel          error
	}{
		// Framing.
		{"empty line", "\n", "line 1: empty line", ErrEmptyLine},
		{"missing newline", capLine, "line 1: missing final newline", ErrMissingNewline},
		{"too long", strings.Repeat(" ", ident.MaxLineBytes+1) + "\n", "line 1: line too long", ErrLineTooLong},
		{"longest line is parsed", strings.Repeat(" ", ident.MaxLineBytes) + "\n", "line 1: malformed json", ErrSyntax},
		{"second line", capLine + "\n" + "{\n", "line 2: malformed json", ErrSyntax},
		{"not json", "hello\n", "line 1: malformed json", ErrSyntax},
		{"truncated", capLine[:100] + "\n", "line 1: malformed json", ErrSyntax},
		{"trailing object", capLine + " {}\n", "line 1: data after the json object", ErrTrailingData},
		{"trailing garbage", capLine + "x\n", "line 1: data after the json object", ErrTrailingData},
		// Shape.
		{"array", "[1]\n", "line 1: wrong type", ErrWrongType},
		{"string", "\"x\"\n", "line 1: wrong type", ErrWrongType},
		{"unknown field first", `{"url":"http://10.0.0.1"}` + "\n", "line 1: unknown field", ErrUnknownField},
		{"unknown field with deep value", `{"x":` + strings.Repeat("[", 3000) + "\n", "line 1: unknown field", ErrUnknownField},
		{"unknown field later", edit(t, `"status":200,`, `"status":200,"prompt":"hi",`) + "\n", "line 1: unknown field", ErrUnknownField},
		{"unknown decision field", edit(t, `"reason":"selected",`, `"reason":"selected","raw":1,`) + "\n", "line 1: replica_scheduler: unknown field", ErrUnknownField},
		{"unknown score field", edit(t, `"rotating_rank":1}`, `"rotating_rank":1,"error":"x"}`) + "\n", "line 1: replica_scheduler.scores[1]: unknown field", ErrUnknownField},
		{"duplicate field", edit(t, `{"request_id":"req-cap-1",`, `{"request_id":"req-cap-1","request_id":"req-cap-1",`) + "\n", "line 1: request_id: duplicate field", ErrDuplicateField},
		{"duplicate score field", edit(t, `"rotating_rank":1}`, `"rotating_rank":1,"rotating_rank":1}`) + "\n", "line 1: replica_scheduler.scores[1].rotating_rank: duplicate field", ErrDuplicateField},
		{"missing field", edit(t, `"status":200,`, "") + "\n", "line 1: status: missing field", ErrMissingField},
		{"missing decision field", edit(t, `"reason":"selected",`, "") + "\n", "line 1: replica_scheduler.reason: missing field", ErrMissingField},
		{"missing score field", edit(t, `"freshness":"unknown",`, "") + "\n", "line 1: replica_scheduler.scores[1].freshness: missing field", ErrMissingField},
		// Types.
		{"string attempts", edit(t, `"attempts":1`, `"attempts":"1"`) + "\n", "line 1: attempts: wrong type", ErrWrongType},
		{"fractional attempts", edit(t, `"attempts":1`, `"attempts":1.0`) + "\n", "line 1: attempts: wrong type", ErrWrongType},
		{"exponent status", edit(t, `"status":200`, `"status":2e2`) + "\n", "line 1: status: wrong type", ErrWrongType},
		{"bool status", edit(t, `"status":200`, `"status":true`) + "\n", "line 1: status: wrong type", ErrWrongType},
		{"numeric request id", edit(t, `"request_id":"req-cap-1"`, `"request_id":5`) + "\n", "line 1: request_id: wrong type", ErrWrongType},
		{"null alias", edit(t, `"alias":"chat"`, `"alias":null`) + "\n", "line 1: alias: wrong type", ErrWrongType},
		{"object tier", edit(t, `"tier":"pool"`, `"tier":{"a":1}`) + "\n", "line 1: tier: wrong type", ErrWrongType},
		{"null evidence", edit(t, capLine[strings.Index(capLine, `"replica_scheduler":`):len(capLine)-1], `"replica_scheduler":null`) + "\n", "line 1: replica_scheduler: wrong type", ErrWrongType},
		{"array evidence", edit(t, capLine[strings.Index(capLine, `"replica_scheduler":`):len(capLine)-1], `"replica_scheduler":[]`) + "\n", "line 1: replica_scheduler: wrong type", ErrWrongType},
		{"null selected", edit(t, `"selected_member_id":"m1"`, `"selected_member_id":null`) + "\n", "line 1: replica_scheduler.selected_member_id: wrong type", ErrWrongType},
		{"string eligible", edit(t, `"eligible_member_ids":["m1","m2"]`, `"eligible_member_ids":"m1"`) + "\n", "line 1: replica_scheduler.eligible_member_ids: wrong type", ErrWrongType},
		{"numeric eligible item", edit(t, `"eligible_member_ids":["m1","m2"]`, `"eligible_member_ids":["m1",2]`) + "\n", "line 1: replica_scheduler.eligible_member_ids[1]: wrong type", ErrWrongType},
		{"object scores", edit(t, `"scores":[`, `"scores":{"a":[`) + "\n", "line 1: replica_scheduler.scores: wrong type", ErrWrongType},
		{"string bool", edit(t, `"upstream_unknown":false`, `"upstream_unknown":"false"`) + "\n", "line 1: replica_scheduler.scores[0].upstream_unknown: wrong type", ErrWrongType},
		{"bool ppm", edit(t, `"upstream_pressure_ppm":250000`, `"upstream_pressure_ppm":false`) + "\n", "line 1: replica_scheduler.scores[0].upstream_pressure_ppm: wrong type", ErrWrongType},
		{"null rank", edit(t, `"rotating_rank":0`, `"rotating_rank":null`) + "\n", "line 1: replica_scheduler.scores[0].rotating_rank: wrong type", ErrWrongType},
		// Values.
		{"attempts 2", edit(t, `"attempts":1`, `"attempts":2`) + "\n", "line 1: attempts: invalid value", ErrInvalidValue},
		{"status 600", edit(t, `"status":200`, `"status":600`) + "\n", "line 1: status: invalid value", ErrInvalidValue},
		{"status 99", edit(t, `"status":200`, `"status":99`) + "\n", "line 1: status: invalid value", ErrInvalidValue},
		{"negative duration", edit(t, `"duration_ns":1234567`, `"duration_ns":-1`) + "\n", "line 1: duration_ns: invalid value", ErrInvalidValue},
		{"duration 2^53", edit(t, `"duration_ns":1234567`, `"duration_ns":9007199254740992`) + "\n", "line 1: duration_ns: invalid value", ErrInvalidValue},
		{"duration beyond int64", edit(t, `"first_byte_ns":234567`, `"first_byte_ns":99999999999999999999`) + "\n", "line 1: first_byte_ns: invalid value", ErrInvalidValue},
		{"route", edit(t, `"route":"replica"`, `"route":"sideways"`) + "\n", "line 1: route: invalid value", ErrInvalidValue},
		{"strategy", edit(t, `"strategy":"capacity"`, `"strategy":"Capacity"`) + "\n", "line 1: strategy: invalid value", ErrInvalidValue},
		{"outcome", edit(t, `"outcome":"success"`, `"outcome":"dial tcp: refused"`) + "\n", "line 1: outcome: invalid value", ErrInvalidValue},
		{"start", edit(t, `"start":"2025-03-04T05:06:07.123456789Z"`, `"start":"yesterday"`) + "\n", "line 1: start: invalid value", ErrInvalidValue},
		{"request id with space", edit(t, `"request_id":"req-cap-1"`, `"request_id":"req cap"`) + "\n", "line 1: request_id: invalid value", ErrInvalidValue},
		{"empty request id", edit(t, `"request_id":"req-cap-1"`, `"request_id":""`) + "\n", "line 1: request_id: invalid value", ErrInvalidValue},
		{"url alias", edit(t, `"alias":"chat"`, `"alias":"http://10.0.0.1:8000"`) + "\n", "line 1: alias: invalid value", ErrInvalidValue},
		{"address tier", edit(t, `"tier":"pool"`, `"tier":"10.0.0.1"`) + "\n", "line 1: tier: invalid value", ErrInvalidValue},
		{"member with colon", edit(t, `"member":"m1"`, `"member":"m1:80"`) + "\n", "line 1: member: invalid value", ErrInvalidValue},
		{"reason", edit(t, `"reason":"selected"`, `"reason":"because"`) + "\n", "line 1: replica_scheduler.reason: invalid value", ErrInvalidValue},
		{"eligible id", edit(t, `"eligible_member_ids":["m1","m2"]`, `"eligible_member_ids":["m1","M2"]`) + "\n", "line 1: replica_scheduler.eligible_member_ids[1]: invalid value", ErrInvalidValue},
		{"address eligible id", edit(t, `"eligible_member_ids":["m1","m2"]`, `"eligible_member_ids":["m1","10.0.0.2"]`) + "\n", "line 1: replica_scheduler.eligible_member_ids[1]: invalid value", ErrInvalidValue},
		{"score member id", edit(t, `"member_id":"m2"`, `"member_id":"m 2"`) + "\n", "line 1: replica_scheduler.scores[1].member_id: invalid value", ErrInvalidValue},
		{"freshness", edit(t, `"freshness":"fresh"`, `"freshness":"fresh-ish"`) + "\n", "line 1: replica_scheduler.scores[0].freshness: invalid value", ErrInvalidValue},
		{"capacity 0", edit(t, `"local_capacity":4,"upstream_unknown":false`, `"local_capacity":0,"upstream_unknown":false`) + "\n", "line 1: replica_scheduler.scores[0].local_capacity: invalid value", ErrInvalidValue},
		{"capacity too big", edit(t, `"local_capacity":4,"upstream_unknown":false`, `"local_capacity":100001,"upstream_unknown":false`) + "\n", "line 1: replica_scheduler.scores[0].local_capacity: invalid value", ErrInvalidValue},
		{"negative active", edit(t, `"local_active":0`, `"local_active":-1`) + "\n", "line 1: replica_scheduler.scores[0].local_active: invalid value", ErrInvalidValue},
		{"ppm too big", edit(t, `"upstream_pressure_ppm":250000`, `"upstream_pressure_ppm":2000000000000001`) + "\n", "line 1: replica_scheduler.scores[0].upstream_pressure_ppm: invalid value", ErrInvalidValue},
		{"rank 16", edit(t, `"rotating_rank":1}`, `"rotating_rank":16}`) + "\n", "line 1: replica_scheduler.scores[1].rotating_rank: invalid value", ErrInvalidValue},
		// Collections.
		{"17 eligible ids", edit(t, `"eligible_member_ids":["m1","m2"]`, `"eligible_member_ids":`+seventeenIDs) + "\n", "line 1: replica_scheduler.eligible_member_ids: too many items", ErrTooManyItems},
		{"17 scores", edit(t, capLine[strings.Index(capLine, `"scores":`):len(capLine)-2], `"scores":`+seventeenScores) + "\n", "line 1: replica_scheduler.scores: too many items", ErrTooManyItems},
		// Consistency.
		{"success without attempt", edit(t, `"attempts":1`, `"attempts":0`) + "\n", "line 1: attempts: inconsistent with other fields", ErrInconsistent},
		{"direct with member", edit(t, `"route":"replica","strategy":"capacity"`, `"route":"direct","strategy":""`) + "\n", "line 1: member: inconsistent with other fields", ErrInconsistent},
		{"unknown but fresh", edit(t, `"upstream_unknown":false`, `"upstream_unknown":true`) + "\n", "line 1: replica_scheduler.scores[0]: inconsistent with other fields", ErrInconsistent},
		{"fresh without ppm", edit(t, `"upstream_pressure_ppm":250000`, `"upstream_pressure_ppm":null`) + "\n", "line 1: replica_scheduler.scores[0]: inconsistent with other fields", ErrInconsistent},
		{"unknown with ppm", edit(t, `"upstream_pressure_ppm":null`, `"upstream_pressure_ppm":5`) + "\n", "line 1: replica_scheduler.scores[1]: inconsistent with other fields", ErrInconsistent},
		{"active at capacity", edit(t, `"local_active":1`, `"local_active":4`) + "\n", "line 1: replica_scheduler.scores[1]: inconsistent with other fields", ErrInconsistent},
		{"eligible mismatch", edit(t, `"eligible_member_ids":["m1","m2"]`, `"eligible_member_ids":["m1","m3"]`) + "\n", "line 1: replica_scheduler: inconsistent with other fields", ErrInconsistent},
		{"eligible unsorted", edit(t, `"eligible_member_ids":["m1","m2"]`, `"eligible_member_ids":["m2","m1"]`) + "\n", "line 1: replica_scheduler: inconsistent with other fields", ErrInconsistent},
		{"eligible duplicate", edit(t, `"eligible_member_ids":["m1","m2"]`, `"eligible_member_ids":["m1","m1"]`) + "\n", "line 1: replica_scheduler: inconsistent with other fields", ErrInconsistent},
		{"rows out of order", edit(t, `"local_active":0`, `"local_active":2`) + "\n", "line 1: replica_scheduler: inconsistent with other fields", ErrInconsistent},
		{"selected not first row", edit(t, `"selected_member_id":"m1"`, `"selected_member_id":"m2"`) + "\n", "line 1: replica_scheduler: inconsistent with other fields", ErrInconsistent},
		{"no-eligible reason", edit(t, `"reason":"selected"`, `"reason":"no-eligible-member"`) + "\n", "line 1: replica_scheduler: inconsistent with other fields", ErrInconsistent},
		{"evidence for another member", edit(t, `"member":"m1"`, `"member":"m2"`) + "\n", "line 1: replica_scheduler: inconsistent with other fields", ErrInconsistent},
		{"evidence on round robin", edit(t, `"strategy":"capacity"`, `"strategy":"round_robin"`) + "\n", "line 1: replica_scheduler: inconsistent with other fields", ErrInconsistent},
		// Canonical form.
		{"whitespace", "{ " + capLine[1:] + "\n", "line 1: not in canonical form", ErrNotCanonical},
		{"key order", edit(t, `{"request_id":"req-cap-1","start":"2025-03-04T05:06:07.123456789Z",`, `{"start":"2025-03-04T05:06:07.123456789Z","request_id":"req-cap-1",`) + "\n", "line 1: not in canonical form", ErrNotCanonical},
		{"offset time", edit(t, `07.123456789Z`, `07.123456789+00:00`) + "\n", "line 1: not in canonical form", ErrNotCanonical},
		{"escaped string", edit(t, `"alias":"chat"`, `"alias":"\u0063hat"`) + "\n", "line 1: not in canonical form", ErrNotCanonical},
		{"carriage return", capLine + "\r\n", "line 1: not in canonical form", ErrNotCanonical},
		{"negative zero", edit(t, `"local_active":0`, `"local_active":-0`) + "\n", "line 1: not in canonical form", ErrNotCanonical},
		// The caller's correlation ID: optional, in the request-ID grammar when present, in its place.
		{"caller id with space", withCallerID(t, `"a b"`), "line 1: caller_request_id: invalid value", ErrInvalidValue},
		{"empty caller id", withCallerID(t, `""`), "line 1: caller_request_id: invalid value", ErrInvalidValue},
		{"marker caller id", withCallerID(t, `"`+InvalidMarker+`"`), "line 1: caller_request_id: invalid value", ErrInvalidValue},
		{"address caller id", withCallerID(t, `"10.0.0.1"`), "line 1: caller_request_id: invalid value", ErrInvalidValue},
		{"long caller id", withCallerID(t, `"`+strings.Repeat("a", ident.MaxRequestIDLength+1)+`"`), "line 1: caller_request_id: invalid value", ErrInvalidValue},
		{"numeric caller id", withCallerID(t, `7`), "line 1: caller_request_id: wrong type", ErrWrongType},
		{"duplicate caller id", withCallerID(t, `"t","caller_request_id":"t"`), "line 1: caller_request_id: duplicate field", ErrDuplicateField},
		{"caller id out of place", edit(t, `"start":`, `"caller_request_id":"t","start":`) + "\n", "line 1: not in canonical form", ErrNotCanonical},
		{"caller id misspelt", edit(t, `,"replica_scheduler":`, `,"caller_request_ids":"t","replica_scheduler":`) + "\n", "line 1: unknown field", ErrUnknownField},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := ReadJSONL(strings.NewReader(tc.input), 100)
			assert.Nil(t, recs)
			require.Error(t, err)
			assert.Equal(t, "decisionlog: "+tc.want, err.Error())
			assert.ErrorIs(t, err, tc.sentinel)
			var le *LineError
			assert.ErrorAs(t, err, &le)
		})
	}
}

func TestFastPathReadsWriterOutput(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "records.jsonl"))
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	lines = append(lines, []byte(capLine))
	for _, line := range lines {
		r, ok := scanCanonical(line)
		require.True(t, ok, "%s", line)
		assert.Equal(t, string(line), string(appendJSON(nil, &r)))
	}
	for _, bad := range []string{"", "{", capLine + " ", " " + capLine, capLine[:len(capLine)-1],
		strings.Replace(capLine, `"alias":"chat"`, `"alias":"c\"hat"`, 1),
		strings.Replace(capLine, `"status":200`, `"status":2000000000000000000000`, 1),
		strings.Replace(capLine, `"rotating_rank":1`, `"rotating_rank":99`, 1),
		strings.Replace(capLine, `"freshness":"fresh"`, `"freshness":"new"`, 1),
		strings.Replace(capLine, `"upstream_unknown":false`, `"upstream_unknown":0`, 1),
		strings.Replace(capLine, `"eligible_member_ids":["m1","m2"]`, `"eligible_member_ids":["m1" ,"m2"]`, 1),
	} {
		_, ok := scanCanonical([]byte(bad))
		assert.False(t, ok, "%s", bad)
	}
}

func TestReadJSONLTolerant(t *testing.T) {
	valid := func(i int) string {
		var b bytes.Buffer
		l := mustLog(t, 4, &b)
		require.NoError(t, l.Add(numbered(i)))
		return b.String()
	}
	long := strings.Repeat("x", ident.MaxLineBytes+100) + "\n"
	justOver := strings.Repeat("y", ident.MaxLineBytes+1) + "\n"
	cases := []struct {
		name    string
		in      string
		ids     []string
		skipped int
		first   error
	}{
		{"clean", valid(1) + valid(2), []string{"req-1", "req-2"}, 0, nil},
		{"empty", "", nil, 0, nil},
		{"garbage between", valid(1) + "{nope\n" + valid(2), []string{"req-1", "req-2"}, 1, ErrSyntax},
		{"over-long line", valid(1) + long + valid(2), []string{"req-1", "req-2"}, 1, ErrLineTooLong},
		{"one byte over the bound", valid(1) + justOver + valid(2), []string{"req-1", "req-2"}, 1, ErrLineTooLong},
		{"cut short", valid(1) + strings.TrimSuffix(valid(2), "\n"), []string{"req-1"}, 1, ErrMissingNewline},
		{"cut inside a long line", valid(1) + strings.Repeat("z", 3*ident.MaxLineBytes), []string{"req-1"}, 1, ErrLineTooLong},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, skipped, first := ReadJSONLTolerant(strings.NewReader(c.in), MaxReadRecords)
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.RequestID)
			}
			assert.Equal(t, c.ids, ids)
			assert.Equal(t, c.skipped, skipped)
			if c.first == nil {
				assert.NoError(t, first)
				return
			}
			assert.ErrorIs(t, first, c.first)
			var le *LineError
			require.ErrorAs(t, first, &le)
			assert.Equal(t, 2, le.Line, "the first skipped line is the second")
		})
	}
	_, _, err := ReadJSONLTolerant(strings.NewReader(""), 0)
	assert.ErrorIs(t, err, ErrLimit)
	recs, _, _ := ReadJSONLTolerant(strings.NewReader(valid(1)+valid(2)+valid(3)), 2)
	assert.Len(t, recs, 2, "reading stops at the limit")
}

// TestReadJSONLShutdown: a shutdown cut is an admitted, one-attempt outcome with the status the caller
// saw; ingestion reads it back and refuses it without its attempt.
func TestReadJSONLShutdown(t *testing.T) {
	line := edit(t, `"outcome":"success"`, `"outcome":"shutdown"`)
	recs, err := ReadJSONL(strings.NewReader(line+"\n"), 1)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, OutcomeShutdown, recs[0].Outcome)
	assert.Equal(t, 200, recs[0].Status)
	assert.True(t, recs[0].Outcome.Admitted())
	var out bytes.Buffer
	require.NoError(t, mustLog(t, 1, &out).Add(recs[0]))
	assert.Equal(t, line+"\n", out.String(), "written back byte for byte")

	_, err = ReadJSONL(strings.NewReader(strings.Replace(line, `"attempts":1`, `"attempts":0`, 1)+"\n"), 1)
	assert.ErrorIs(t, err, ErrInconsistent)
}
