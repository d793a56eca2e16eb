package decisionlog

import (
	"time"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// scanCanonical is ingestion's fast path: a positional parser for exactly the writer's
// layout (fixed keys in fixed order, no whitespace, no escapes). It never decides
// acceptance alone: parseLine still validates its result and requires the line to be
// byte-identical to the result's encoding, and any line it cannot read goes to the
// token-level decoder, which is the authority for error messages. A mistake here can
// therefore only cost speed, never admit a line the decoder would refuse.
func scanCanonical(line []byte) (Record, bool) {
	c := scanner{b: line, ok: true}
	var r Record
	r.RequestID = c.str(`{"request_id":`)
	start := c.str(`,"start":`)
	r.Alias = c.str(`,"alias":`)
	r.Tier = c.str(`,"tier":`)
	r.Member = c.str(`,"member":`)
	r.Route = Route(c.str(`,"route":`))
	r.Strategy = Strategy(c.str(`,"strategy":`))
	r.Outcome = Outcome(c.str(`,"outcome":`))
	r.Attempts = int(c.int(`,"attempts":`))
	r.Status = int(c.int(`,"status":`))
	r.Duration = time.Duration(c.int(`,"duration_ns":`))
	r.FirstByte = time.Duration(c.int(`,"first_byte_ns":`))
	if c.peek(`,"queued_ns":`) {
		r.Queued = time.Duration(c.int(`,"queued_ns":`))
	}
	if c.peek(`,"ejected_members":`) {
		r.EjectedMembers = int(c.int(`,"ejected_members":`))
	}
	if c.peek(`,"config_digest":`) {
		r.ConfigDigest = c.str(`,"config_digest":`)
	}
	if c.peek(`,"caller_request_id":`) {
		r.CallerRequestID = c.str("")
	}
	if c.peek(`,"caller":`) {
		r.Caller = c.str("")
	}
	if c.peek(`,"trace_id":`) {
		r.TraceID = c.str("")
	}
	if c.peek(`,"prompt_tokens":`) {
		r.Usage = Usage{Prompt: c.int(""), Completion: c.int(`,"completion_tokens":`), Reported: true}
	}
	if c.peek(`,"replica_scheduler":`) {
		d, ok := c.decision()
		if !ok {
			return Record{}, false
		}
		r.ReplicaScheduler = &d
	}
	c.lit("}")
	if !c.ok || c.i != len(c.b) {
		return Record{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, start)
	if err != nil {
		return Record{}, false
	}
	r.Start = ts.UTC()
	return r, true
}

func (c *scanner) decision() (scheduler.Decision, bool) {
	selected := c.str(`{"selected_member_id":`)
	reason, err := scheduler.ParseReason(c.str(`,"reason":`))
	c.lit(`,"eligible_member_ids":[`)
	var eligible []string
	for i := 0; c.ok && !c.peek("]"); i++ {
		sep := ","
		if i == 0 {
			sep = ""
		}
		eligible = append(eligible, c.str(sep))
		c.ok = c.ok && i < ident.MaxMembers
	}
	c.lit(`,"scores":[`)
	var scores []scheduler.Score
	for i := 0; c.ok && !c.peek("]"); i++ {
		if i > 0 {
			c.lit(",")
		}
		s, ok := c.score()
		scores = append(scores, s)
		c.ok = c.ok && ok && i < ident.MaxMembers
	}
	c.lit("}")
	if !c.ok || err != nil {
		return scheduler.Decision{}, false
	}
	for _, id := range eligible {
		if !ident.ValidID(id) {
			return scheduler.Decision{}, false
		}
	}
	d, derr := scheduler.NewDecision(selected, true, reason, eligible, scores)
	return d, derr == nil
}

func (c *scanner) score() (scheduler.Score, bool) {
	id := c.str(`{"member_id":`)
	active := c.int(`,"local_active":`)
	capacity := c.int(`,"local_capacity":`)
	c.lit(`,"upstream_unknown":`)
	unknown := c.peek("true")
	if !unknown {
		c.lit("false")
	}
	c.lit(`,"upstream_pressure_ppm":`)
	var ppm int64
	hasPPM := !c.peek("null")
	if hasPPM {
		ppm = c.int("")
	}
	f, err := scheduler.ParseFreshness(c.str(`,"freshness":`))
	rank := c.int(`,"rotating_rank":`)
	c.lit("}")
	if !c.ok || err != nil || rank < 0 || rank >= ident.MaxMembers || !ident.ValidID(id) {
		return scheduler.Score{}, false
	}
	s, serr := scheduler.NewScore(id, active, capacity, unknown, ppm, hasPPM, f, int(rank))
	return s, serr == nil
}

// scanner reads the canonical layout; after the first mismatch ok stays false and
// every read returns a zero value.
type scanner struct {
	b  []byte
	i  int
	ok bool
}

// peek consumes s when the input continues with it.
func (c *scanner) peek(s string) bool {
	if c.ok && len(c.b)-c.i >= len(s) && string(c.b[c.i:c.i+len(s)]) == s {
		c.i += len(s)
		return true
	}
	return false
}

func (c *scanner) lit(s string) {
	if !c.peek(s) {
		c.ok = false
	}
}

// str reads key, then a string without escapes or control characters.
func (c *scanner) str(key string) string {
	c.lit(key)
	c.lit(`"`)
	if !c.ok {
		return ""
	}
	for j := c.i; j < len(c.b); j++ {
		switch ch := c.b[j]; {
		case ch == '"':
			s := string(c.b[c.i:j])
			c.i = j + 1
			return s
		case ch == '\\' || ch < 0x20:
			c.ok = false
			return ""
		}
	}
	c.ok = false
	return ""
}

// int reads key, then an optionally negative decimal integer of at most 18 digits, so
// it cannot overflow; longer numbers are left to the decoder.
func (c *scanner) int(key string) int64 {
	c.lit(key)
	if !c.ok {
		return 0
	}
	neg := c.peek("-")
	var v int64
	j := c.i
	for ; j < len(c.b) && j-c.i <= 18 && c.b[j] >= '0' && c.b[j] <= '9'; j++ {
		v = v*10 + int64(c.b[j]-'0')
	}
	if j == c.i || j-c.i > 18 {
		c.ok = false
		return 0
	}
	c.i = j
	if neg {
		v = -v
	}
	return v
}
