package decisionlog

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/anvil-llm/anvil/router/scheduler"
)

// appendJSON appends the canonical JSON object of a normalized record: fixed key order,
// no whitespace, start in RFC 3339 UTC with nanoseconds, durations in integer
// nanoseconds, and queued_ns, ejected_members, config_digest, caller_request_id, caller, trace_id,
// prompt_tokens and completion_tokens (together) and replica_scheduler only when present. Every
// string it writes is a
// validated ID, marker or enum name, none of which needs JSON escaping, so the bytes
// are produced directly rather than through reflection.
func appendJSON(b []byte, r *Record) []byte {
	b = appendStringField(b, `{"request_id":`, r.RequestID)
	b = append(b, `,"start":"`...)
	b = r.Start.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = appendStringField(b, `,"alias":`, r.Alias)
	b = appendStringField(b, `,"tier":`, r.Tier)
	b = appendStringField(b, `,"member":`, r.Member)
	b = appendStringField(b, `,"route":`, string(r.Route))
	b = appendStringField(b, `,"strategy":`, string(r.Strategy))
	b = appendStringField(b, `,"outcome":`, string(r.Outcome))
	b = appendIntField(b, `,"attempts":`, int64(r.Attempts))
	b = appendIntField(b, `,"status":`, int64(r.Status))
	b = appendIntField(b, `,"duration_ns":`, int64(r.Duration))
	b = appendIntField(b, `,"first_byte_ns":`, int64(r.FirstByte))
	if r.Queued > 0 {
		b = appendIntField(b, `,"queued_ns":`, int64(r.Queued))
	}
	if r.EjectedMembers > 0 {
		b = appendIntField(b, `,"ejected_members":`, int64(r.EjectedMembers))
	}
	if r.ConfigDigest != "" {
		b = appendStringField(b, `,"config_digest":`, r.ConfigDigest)
	}
	if r.CallerRequestID != "" {
		b = appendStringField(b, `,"caller_request_id":`, r.CallerRequestID)
	}
	if r.Caller != "" {
		b = appendStringField(b, `,"caller":`, r.Caller)
	}
	if r.TraceID != "" {
		b = appendStringField(b, `,"trace_id":`, r.TraceID)
	}
	b = appendUsage(b, r.Usage)
	if r.ReplicaScheduler != nil {
		b = append(b, `,"replica_scheduler":`...)
		b = appendDecision(b, r.ReplicaScheduler)
	}
	return append(b, '}')
}

// JSON returns the record's canonical JSON object: exactly the bytes of its JSONL sink line, without
// the newline. It applies Log.Add's normalization first (sanitized IDs, evidence that does not fit
// dropped), so what it writes always reads back through ReadJSONL; a record that breaks an invariant
// returns an error wrapping ErrInvalidRecord. Operator surfaces that show records as JSON (the
// decisions endpoint's format=json) use it: there is one serializer.
func (r Record) JSON() ([]byte, error) {
	n, err := normalize(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
	return appendJSON(make([]byte, 0, 512), &n.rec), nil
}

// appendDecision writes the four canonical decision fields and, per row, the seven
// canonical score fields; nothing else of the decision is reachable.
func appendDecision(b []byte, d *scheduler.Decision) []byte {
	sel, _ := d.SelectedMemberID()
	b = appendStringField(b, `{"selected_member_id":`, sel)
	b = appendStringField(b, `,"reason":`, d.Reason().String())
	b = append(b, `,"eligible_member_ids":[`...)
	for i := range d.EligibleCount() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, d.EligibleID(i)...)
		b = append(b, '"')
	}
	b = append(b, `],"scores":[`...)
	for i := range d.EligibleCount() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendScore(b, d.Score(i))
	}
	return append(b, "]}"...)
}

func appendScore(b []byte, s scheduler.Score) []byte {
	b = appendStringField(b, `{"member_id":`, s.MemberID())
	b = appendIntField(b, `,"local_active":`, s.LocalActive())
	b = appendIntField(b, `,"local_capacity":`, s.LocalCapacity())
	b = append(b, `,"upstream_unknown":`...)
	b = strconv.AppendBool(b, s.UpstreamUnknown())
	b = append(b, `,"upstream_pressure_ppm":`...)
	if ppm, ok := s.UpstreamPressurePPM(); ok {
		b = strconv.AppendInt(b, ppm, 10)
	} else {
		b = append(b, "null"...)
	}
	b = appendStringField(b, `,"freshness":`, s.Freshness().String())
	b = appendIntField(b, `,"rotating_rank":`, int64(s.RotatingRank()))
	return append(b, '}')
}

func appendStringField(b []byte, key, v string) []byte {
	b = append(b, key...)
	b = append(b, '"')
	b = append(b, v...)
	return append(b, '"')
}

func appendIntField(b []byte, key string, v int64) []byte {
	b = append(b, key...)
	return strconv.AppendInt(b, v, 10)
}

// Line formats the record as one stable key=value line for humans and text logs:
//
//	start=... request_id=... alias=... tier=... member=... route=... strategy=...
//	outcome=... attempts=N status=N duration_ms=N.NNN first_byte_ms=N.NNN
//
// Empty values print as "-". Line applies the same normalization as Log.Add: invalid
// IDs print as InvalidMarker, an undefined enum value prints as InvalidMarker, and the
// suffix "replica_scheduler=capacity replica_scheduler_reason=selected
// replica_eligible_count=N" appears only when the record is valid and carries valid
// evidence. Full score rows belong to the JSONL and the summary only.
//
// The spec keeps the line's legacy bytes unchanged: besides queued_ms and ejected_members, which
// only a queue or passive health (features a legacy deployment does not have) write, the fields
// added since (config_digest, caller_request_id, caller, trace_id, prompt_tokens and completion_tokens) are
// in the JSON encodings, the summaries and the access log, never in the line.
func (r Record) Line() string {
	n, err := normalize(r)
	rec := n.rec
	if !rec.Route.Valid() {
		rec.Route = InvalidMarker
	}
	if !rec.Strategy.Valid() {
		rec.Strategy = InvalidMarker
	}
	if !rec.Outcome.Valid() {
		rec.Outcome = InvalidMarker
	}
	var b strings.Builder
	b.Grow(256)
	b.WriteString("start=")
	b.WriteString(rec.Start.Format(time.RFC3339Nano))
	writeKV(&b, "request_id", rec.RequestID)
	writeKV(&b, "alias", rec.Alias)
	writeKV(&b, "tier", rec.Tier)
	writeKV(&b, "member", rec.Member)
	writeKV(&b, "route", string(rec.Route))
	writeKV(&b, "strategy", string(rec.Strategy))
	writeKV(&b, "outcome", string(rec.Outcome))
	writeKV(&b, "attempts", strconv.Itoa(rec.Attempts))
	writeKV(&b, "status", strconv.Itoa(rec.Status))
	writeKV(&b, "duration_ms", millis(rec.Duration))
	writeKV(&b, "first_byte_ms", millis(rec.FirstByte))
	if rec.Queued > 0 {
		writeKV(&b, "queued_ms", millis(rec.Queued))
	}
	if rec.EjectedMembers > 0 {
		writeKV(&b, "ejected_members", strconv.Itoa(rec.EjectedMembers))
	}
	if err == nil && rec.ReplicaScheduler != nil {
		b.WriteString(" replica_scheduler=capacity replica_scheduler_reason=selected replica_eligible_count=")
		b.WriteString(strconv.Itoa(rec.ReplicaScheduler.EligibleCount()))
	}
	return b.String()
}

func writeKV(b *strings.Builder, k, v string) {
	if v == "" {
		v = "-"
	}
	b.WriteByte(' ')
	b.WriteString(k)
	b.WriteByte('=')
	b.WriteString(v)
}

// millis renders d in milliseconds with microsecond precision (truncated), using
// integer arithmetic so the text is exact and stable.
func millis(d time.Duration) string {
	us := d.Microseconds()
	sign := ""
	if us < 0 {
		sign, us = "-", -us
	}
	frac := strconv.FormatInt(us%1000, 10)
	return sign + strconv.FormatInt(us/1000, 10) + "." + strings.Repeat("0", 3-len(frac)) + frac
}
