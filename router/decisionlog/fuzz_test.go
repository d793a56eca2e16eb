package decisionlog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
	"github.com/stretchr/testify/assert"
)

var lineSentinels = []error{ErrInvalidValue, ErrInconsistent, ErrLineTooLong, ErrEmptyLine,
	ErrMissingNewline, ErrSyntax, ErrTrailingData, ErrUnknownField, ErrDuplicateField,
	ErrMissingField, ErrWrongType, ErrTooManyItems, ErrNotCanonical, ErrTooManyRecords}

// FuzzReadJSONL: ingestion never panics, fails only with a LineError carrying one of the
// fixed sentinels, and anything it accepts is exactly what the writer produces.
func FuzzReadJSONL(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "records.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	for _, line := range strings.SplitAfter(string(data), "\n") {
		f.Add([]byte(line))
	}
	for _, s := range []string{"", "\n", "{}\n", "[]\n", capLine, capLine + "\n" + capLine + "\n",
		strings.Replace(capLine, `"rotating_rank":1`, `"rotating_rank":1,"rotating_rank":1`, 1) + "\n",
		strings.Replace(capLine, `"upstream_pressure_ppm":null`, `"upstream_pressure_ppm":1`, 1) + "\n",
		strings.Replace(capLine, `"status":200,`, `"status":200,"prompt":"hi",`, 1) + "\n",
		strings.Replace(capLine, `"alias":"chat"`, `"alias":"\u0063hat"`, 1) + "\n",
		strings.Replace(capLine, `"attempts":1`, `"attempts":1.0`, 1) + "\n",
		strings.Replace(capLine, `"outcome":"success"`, `"outcome":"internal_error"`, 1) + "\n",
		strings.Replace(strings.Replace(capLine, `"outcome":"success"`, `"outcome":"internal_error"`, 1), `"attempts":1`, `"attempts":0`, 1) + "\n",
		strings.Replace(capLine, `"eligible_member_ids":["m1","m2"]`, `"eligible_member_ids":["m1","m3"]`, 1) + "\n",
		"{ " + capLine[1:] + "\n", capLine + "\r\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller_request_id":"trace-1","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller_request_id":"","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller_request_id":"-invalid-","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller_request_id":"a b","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller_request_id":7,"replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller_request_id":"t","caller_request_id":"t","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `"request_id":"req-cap-1",`, `"request_id":"req-cap-1","caller_request_id":"t",`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller_request_ids":"t","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller":"team-a","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller_request_id":"t","caller":"caller-1","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller":"","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller":"Team-A","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller":"10.0.0.1","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller":"-invalid-","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller":1,"replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"caller":"a","caller_request_id":"t","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"trace_id":"4BF92F3577B34DA6A3CE929D0E0E4736","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"trace_id":"","replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"prompt_tokens":12,"completion_tokens":34,"replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"prompt_tokens":12,"replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"completion_tokens":34,"prompt_tokens":12,"replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"prompt_tokens":-1,"completion_tokens":9007199254740992,"replica_scheduler"`, 1) + "\n",
		strings.Replace(capLine, `,"replica_scheduler"`, `,"prompt_tokens":1.0,"completion_tokens":0,"replica_scheduler"`, 1) + "\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ReadJSONL(bytes.NewReader(data), 64)
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 || !isSentinel(le.Err) {
				t.Fatalf("unexpected error shape: %v", err)
			}
			return
		}
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			if len(line) > 0 {
				checkDecoderAgrees(t, line[:len(line)-1])
			}
		}
		var out bytes.Buffer
		l, err := New(64, &out)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := l.Add(r); err != nil {
				t.Fatalf("accepted record refused by Add: %v", err)
			}
			_ = r.Line()
		}
		if !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("round trip differs:\n in: %q\nout: %q", data, out.Bytes())
		}
		if st := l.Stats(); st.IDsReplaced != 0 || st.EvidenceDiscarded != 0 || st.SinkOversize != 0 {
			t.Fatalf("accepted input needed normalization: %+v", st)
		}
		_ = Summarize(recs).Text()
	})
}

// checkDecoderAgrees: the fast path never accepts what the token decoder refuses, and
// both read the same record.
func checkDecoderAgrees(t interface {
	Helper()
	Fatalf(string, ...any)
}, line []byte) {
	t.Helper()
	slow, err := decodeRecord(line)
	if err == nil {
		err = checkParsed(&slow, line)
	}
	if err != nil {
		t.Fatalf("decoder refuses an accepted line: %v\n%s", err, line)
	}
	if fast, ok := scanCanonical(line); ok && !bytes.Equal(appendJSON(nil, &fast), appendJSON(nil, &slow)) {
		t.Fatalf("fast path and decoder disagree:\n%s", line)
	}
}

func isSentinel(err error) bool {
	for _, s := range lineSentinels {
		if err == s {
			return true
		}
	}
	return false
}

// TestPropertyAddedRecordsRoundTrip: whatever Add accepts, however odd its input, is
// stored in a form ingestion accepts and reconstitutes exactly.
func TestPropertyAddedRecordsRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var sink bytes.Buffer
		l, err := New(32, &sink)
		if err != nil {
			t.Fatal(err)
		}
		n := rapid.IntRange(1, 8).Draw(t, "n")
		for i := range n {
			_ = l.Add(genRecord(t, i))
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(sink.Bytes(), []byte("\n")), []byte("\n")) {
			if len(line) > 0 {
				checkDecoderAgrees(t, line)
			}
		}
		stored := l.Recent(32)
		got, err := ReadJSONL(bytes.NewReader(sink.Bytes()), 32)
		if err != nil {
			t.Fatalf("writer output refused: %v\n%s", err, sink.String())
		}
		if len(got) != len(stored) {
			t.Fatalf("read %d records, stored %d", len(got), len(stored))
		}
		for i := range got {
			a, b := appendJSON(nil, &got[i]), appendJSON(nil, &stored[i])
			if !bytes.Equal(a, b) {
				t.Fatalf("record %d differs:\n%s\n%s", i, a, b)
			}
			if !strings.Contains(got[i].Line(), "request_id="+got[i].RequestID+" ") {
				t.Fatalf("line lacks the request id: %s", got[i].Line())
			}
			if c := got[i].CallerRequestID; c != "" && (!ident.ValidRequestID(c) ||
				strings.Contains(got[i].Line(), "caller_request_id=")) {
				t.Fatalf("caller request id stored out of grammar or in the line (legacy bytes): %q", c)
			}
			if c := got[i].Caller; c != "" && (!ident.ValidID(c) || strings.Contains(got[i].Line(), " caller=")) {
				t.Fatalf("caller stored out of grammar or in the line (legacy bytes): %q", c)
			}
		}
	})
}

func genID(t *rapid.T, label string) string {
	return rapid.OneOf(
		rapid.StringMatching(`[a-z0-9][a-z0-9._-]{0,10}`),
		rapid.StringMatching(`[a-z0-9][a-z0-9._-]{0,10}`),
		rapid.SampledFrom([]string{"", "m1", "10.0.0.1", "a b", "x/y", "h:1", InvalidMarker}),
		rapid.StringMatching(`[a-zA-Z0-9._:/ -]{0,12}`),
	).Draw(t, label)
}

// genRecord draws a record consistent by construction, then perturbs one field in a
// fifth of the draws, so both accepted and refused records are common.
func genRecord(t *rapid.T, i int) Record {
	o := rapid.SampledFrom(Outcomes()).Draw(t, "outcome")
	lo, hi, _ := o.attemptRange()
	r := Record{
		RequestID: genID(t, "request_id"),
		Alias:     genID(t, "alias"),
		Outcome:   o,
		Attempts:  rapid.IntRange(lo, hi).Draw(t, "attempts"),
		Status:    rapid.SampledFrom([]int{0, 100, 200, 429, 503, 599}).Draw(t, "status"),
		Start: t0.Add(time.Duration(rapid.Int64Range(-1e18, 1e18).Draw(t, "start")) +
			time.Duration(i)).In(time.FixedZone("z", rapid.IntRange(-43200, 43200).Draw(t, "zone"))),
		Duration:  time.Duration(rapid.Int64Range(0, int64(MaxDuration)).Draw(t, "duration")),
		FirstByte: time.Duration(rapid.Int64Range(0, int64(MaxDuration)).Draw(t, "first_byte")),
	}
	if rapid.Bool().Draw(t, "caller_id") {
		r.CallerRequestID = genID(t, "caller_request_id")
	}
	if rapid.Bool().Draw(t, "has_caller") {
		r.Caller = genID(t, "caller")
	}
	if rapid.Bool().Draw(t, "has_trace") {
		r.TraceID = rapid.StringMatching(`[0-9a-f]{31}[1-9a-f]`).Draw(t, "trace_id")
	}
	switch route := rapid.IntRange(0, 2).Draw(t, "route"); {
	case route == 0 && r.Attempts == 0:
	case route == 1:
		r.Route, r.Tier = RouteDirect, genID(t, "tier")
	default:
		r.Route, r.Tier, r.Member = RouteReplica, genID(t, "tier"), genID(t, "member")
		r.Strategy = rapid.SampledFrom([]Strategy{StrategyRoundRobin, StrategyCapacity}).Draw(t, "strategy")
		if rapid.Bool().Draw(t, "evidence") {
			d := genDecision(t)
			if sel, ok := d.SelectedMemberID(); ok && rapid.IntRange(0, 3).Draw(t, "member_is_selected") > 0 {
				r.Member = sel
			}
			r.ReplicaScheduler = &d
		}
	}
	perturb(t, &r)
	return r
}

func perturb(t *rapid.T, r *Record) {
	switch rapid.IntRange(0, 24).Draw(t, "perturb") {
	case 0:
		r.Route = Route(rapid.SampledFrom([]string{"", "direct", "replica", "x"}).Draw(t, "bad_route"))
	case 1:
		r.Strategy = Strategy(rapid.SampledFrom([]string{"", "round_robin", "capacity", "y"}).Draw(t, "bad_strategy"))
	case 2:
		r.Outcome = rapid.SampledFrom(append(Outcomes(), "boom")).Draw(t, "bad_outcome")
	case 3:
		r.Attempts = rapid.IntRange(-1, 2).Draw(t, "bad_attempts")
	case 4:
		r.Status = rapid.IntRange(-1, 700).Draw(t, "bad_status")
	case 5:
		r.Duration = time.Duration(rapid.Int64().Draw(t, "bad_duration"))
	case 6:
		r.Member = genID(t, "bad_member")
	}
}

func genDecision(t *rapid.T) scheduler.Decision {
	n := rapid.IntRange(ident.MinMembers, ident.MaxMembers).Draw(t, "members")
	cands := make([]scheduler.Candidate, n)
	for i := range cands {
		capacity := rapid.Int64Range(1, 8).Draw(t, "capacity")
		var p scheduler.Pressure
		if rapid.Bool().Draw(t, "fresh") {
			var err error
			p, err = scheduler.NewPressure(scheduler.FreshnessFresh, rapid.Int64Range(0, 3_000_000).Draw(t, "ppm"),
				true, scheduler.SignalValid, scheduler.SignalValid)
			if err != nil {
				t.Fatal(err)
			}
		}
		c, err := scheduler.NewCandidate("m"+string(rune('a'+i)), rapid.Bool().Draw(t, "eligible"),
			rapid.Int64Range(0, capacity).Draw(t, "active"), capacity, p)
		if err != nil {
			t.Fatal(err)
		}
		cands[i] = c
	}
	d, err := scheduler.Rank(cands, rapid.IntRange(0, n-1).Draw(t, "cursor"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// FuzzReadJSONLTolerant: the tolerant reader never panics, agrees with the strict reader whenever
// the strict reader accepts the input, and never keeps more records than the input has lines.
func FuzzReadJSONLTolerant(f *testing.F) {
	var b bytes.Buffer
	l, err := New(4, &b)
	if err != nil {
		f.Fatal(err)
	}
	if err := l.Add(Record{RequestID: "r1", Outcome: OutcomeRefused, Start: time.Unix(1, 0)}); err != nil {
		f.Fatal(err)
	}
	line := b.String()
	f.Add(line + line)
	f.Add(line + "{x\n" + line)
	f.Add(strings.TrimSuffix(line, "\n"))
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		recs, skipped, first := ReadJSONLTolerant(strings.NewReader(in), MaxReadRecords)
		assert.Equal(t, skipped > 0, first != nil)
		assert.LessOrEqual(t, len(recs)+skipped, strings.Count(in, "\n")+1)
		if strict, err := ReadJSONL(strings.NewReader(in), MaxReadRecords); err == nil {
			assert.Equal(t, strict, recs)
			assert.Zero(t, skipped)
		}
	})
}
