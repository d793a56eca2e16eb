package decisionlog

import (
	"time"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// Route is how a request was routed. The empty route means the request was refused
// before it resolved to a tier.
type Route string

// The closed set of routes.
const (
	RouteNone    Route = ""
	RouteDirect  Route = "direct"
	RouteReplica Route = "replica"
)

// Valid reports whether r is one of the defined routes.
func (r Route) Valid() bool { return r == RouteNone || r == RouteDirect || r == RouteReplica }

// Strategy is the replica selection strategy of the record's tier; empty for direct
// tiers and unrouted requests.
type Strategy string

// The closed set of strategies.
const (
	StrategyNone       Strategy = ""
	StrategyRoundRobin Strategy = "round_robin"
	StrategyCapacity   Strategy = "capacity"
)

// Valid reports whether s is one of the defined strategies.
func (s Strategy) Valid() bool {
	return s == StrategyNone || s == StrategyRoundRobin || s == StrategyCapacity
}

// Bounds of the record fields.
const (
	// InvalidMarker replaces an ID that fails its grammar. It cannot collide with a
	// valid ID because no grammar allows a leading '-'.
	InvalidMarker = "-invalid-"

	// MaxDuration bounds Duration and FirstByte: serialized integers stay below 2^53.
	MaxDuration = time.Duration(1<<53 - 1)
)

// Record is one request's decision record. Its fields are IDs, enums and numbers only.
//
// Invariants enforced by Log.Add (a record breaking one is refused, see checkFields):
//   - Route, Strategy and Outcome are defined values; Attempts is 0 or 1 and matches
//     the outcome (0 for refused/not_admitted, 1 for upstream outcomes);
//   - Status is 0 (nothing sent) or 100-599; Start is a non-zero time in years
//     1-9999; Duration and FirstByte are 0..MaxDuration;
//   - RouteNone has no tier, member or strategy and no attempt; RouteDirect has a tier,
//     no member and no strategy; RouteReplica has a tier and a strategy, and a member
//     whenever an attempt was made.
//
// IDs are sanitized instead (ident.ValidRequestID, ident.ValidAlias, ident.ValidID): a
// failing ID becomes InvalidMarker, as does an empty RequestID; an empty Alias, Tier or
// Member means "none". No ID may be an IP address, with or without a port. The server
// records only configured aliases, never the caller's unresolved model string.
type Record struct {
	RequestID string
	Alias     string
	Tier      string
	Member    string
	Route     Route
	Strategy  Strategy
	Outcome   Outcome
	Attempts  int
	Status    int
	Start     time.Time
	Duration  time.Duration
	FirstByte time.Duration
	// Queued is how long the request waited in its tier's admission queue (0: it did not queue; 0 is
	// omitted from every encoding). It is part of Duration.
	Queued time.Duration
	// EjectedMembers is how many members of the record's replica tier passive health held out of
	// eligibility when the request was admitted or refused (0-15; 0 is omitted from every encoding).
	// A request routed, or refused, while members were ejected says so here.
	EjectedMembers int
	// ConfigDigest names the configuration generation that admitted (or refused) the request: the
	// first 16 hex digits of its file's sha256, "" when the router's config came from no file (the
	// simulator) and omitted from every encoding then.
	ConfigDigest string
	// CallerRequestID is the caller's own X-Request-ID, kept beside RequestID (always the router's,
	// unique per request) as a correlation value only: the server keeps it when it passes
	// ident.ValidRequestID and is not, and does not contain, a configured credential; "" when the
	// caller sent none or it was dropped, and omitted from every encoding then. One failing the
	// grammar is dropped by sanitizing (never InvalidMarker: present means kept).
	CallerRequestID string
	// Caller is the label of the caller token that authenticated the request (auth.callers' label,
	// or "caller-N" for an unlabelled token by its position; "other" past the bound): never the token.
	// "" when none is known, and omitted from every encoding then. It is in the ID grammar
	// (ident.ValidID); one failing it is dropped by sanitizing, like CallerRequestID.
	Caller string
	// TraceID is the W3C trace ID of the request's trace (32 lowercase hex digits, not all zeros): the
	// router's span's when tracing is on, else the caller's valid traceparent's, so a record and a
	// trace can be joined. "" when there is none, and omitted from every encoding then; one failing the
	// grammar is dropped by sanitizing. Like the fields added before it, it is never in Line.
	TraceID string
	// Usage is the member's own token counts for the answer (prompt_tokens and completion_tokens,
	// both or neither: omitted from every encoding when not reported). See Usage.
	Usage Usage

	// ReplicaScheduler is the capacity lease's decision. It is kept only for a
	// capacity-strategy replica record whose Member is the decision's selected member
	// with reason selected; otherwise, or when malformed, it is discarded and the
	// record kept. Stored records hold a private copy rebuilt through the scheduler's
	// validating constructors.
	ReplicaScheduler *scheduler.Decision
}

// idRule is the grammar of one ID field, named by its JSON key.
type idRule struct {
	name     string
	valid    func(string) bool
	optional bool // empty means "none" rather than invalid
}

// accepts reports whether v is a value the field may hold after sanitizing.
func (f idRule) accepts(v string) bool {
	return v == InvalidMarker || (f.optional && v == "") || f.valid(v)
}

func requestIDRule() idRule { return idRule{"request_id", ident.ValidRequestID, false} }
func aliasRule() idRule     { return idRule{"alias", ident.ValidAlias, true} }
func tierRule() idRule      { return idRule{"tier", ident.ValidID, true} }
func memberRule() idRule    { return idRule{"member", ident.ValidID, true} }

// sanitizeIDs replaces every unacceptable ID by InvalidMarker and returns how many it
// replaced. The fields are listed out rather than reached through accessor closures,
// which would move every record to the heap.
func sanitizeIDs(r *Record) int {
	n := 0
	for _, f := range [...]struct {
		p    *string
		rule idRule
	}{{&r.RequestID, requestIDRule()}, {&r.Alias, aliasRule()}, {&r.Tier, tierRule()}, {&r.Member, memberRule()}} {
		if !f.rule.accepts(*f.p) {
			*f.p = InvalidMarker
			n++
		}
	}
	if !validCallerID(r.CallerRequestID) {
		r.CallerRequestID = "" // a correlation value that fails its grammar is no correlation: dropped
		n++
	}
	if !validCaller(r.Caller) {
		r.Caller = ""
		n++
	}
	if !validTraceID(r.TraceID) {
		r.TraceID = ""
		n++
	}
	return n
}

// validCallerID: CallerRequestID is absent or in the request-ID grammar; never InvalidMarker.
func validCallerID(s string) bool { return s == "" || ident.ValidRequestID(s) }

// validCaller: Caller is absent or in the ID grammar; never InvalidMarker.
func validCaller(s string) bool { return s == "" || ident.ValidID(s) }

// validTraceID: TraceID is absent or 32 lowercase hex digits, not all zeros.
func validTraceID(s string) bool {
	if s == "" {
		return true
	}
	if len(s) != 32 {
		return false
	}
	zero := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
		zero = zero && c == '0'
	}
	return !zero
}

// checkIDs is the strict form used by ingestion: the first unacceptable ID field.
func checkIDs(r *Record) error {
	for _, f := range [...]struct {
		v    string
		rule idRule
	}{{r.RequestID, requestIDRule()}, {r.Alias, aliasRule()}, {r.Tier, tierRule()}, {r.Member, memberRule()}} {
		if !f.rule.accepts(f.v) {
			return &fieldError{f.rule.name, ErrInvalidValue}
		}
	}
	if !validCallerID(r.CallerRequestID) {
		return &fieldError{"caller_request_id", ErrInvalidValue}
	}
	if !validCaller(r.Caller) {
		return &fieldError{"caller", ErrInvalidValue}
	}
	if !validTraceID(r.TraceID) {
		return &fieldError{"trace_id", ErrInvalidValue}
	}
	return nil
}

// checkFields enforces the record invariants listed on Record. IDs are assumed
// sanitized; evidence is checked separately because it is optional.
func checkFields(r *Record) error {
	switch {
	case !r.Route.Valid():
		return &fieldError{"route", ErrInvalidValue}
	case !r.Strategy.Valid():
		return &fieldError{"strategy", ErrInvalidValue}
	case !r.Outcome.Valid():
		return &fieldError{"outcome", ErrInvalidValue}
	case r.Attempts < 0 || r.Attempts > 1:
		return &fieldError{"attempts", ErrInvalidValue}
	case r.Status != 0 && (r.Status < 100 || r.Status > 599):
		return &fieldError{"status", ErrInvalidValue}
	case r.Start.IsZero() || r.Start.Year() < 1 || r.Start.Year() > 9999:
		return &fieldError{"start", ErrInvalidValue}
	case r.Duration < 0 || r.Duration > MaxDuration:
		return &fieldError{"duration_ns", ErrInvalidValue}
	case r.FirstByte < 0 || r.FirstByte > MaxDuration:
		return &fieldError{"first_byte_ns", ErrInvalidValue}
	case r.Queued < 0 || r.Queued > r.Duration:
		return &fieldError{"queued_ns", ErrInvalidValue}
	case r.EjectedMembers < 0 || r.EjectedMembers >= ident.MaxMembers:
		return &fieldError{"ejected_members", ErrInvalidValue}
	case r.EjectedMembers > 0 && r.Route != RouteReplica:
		return &fieldError{"ejected_members", ErrInconsistent}
	case r.ConfigDigest != "" && !validDigest(r.ConfigDigest):
		return &fieldError{"config_digest", ErrInvalidValue}
	}
	if lo, hi, _ := r.Outcome.attemptRange(); r.Attempts < lo || r.Attempts > hi {
		return &fieldError{"attempts", ErrInconsistent}
	}
	if err := checkUsage(r); err != nil {
		return err
	}
	return checkRoute(r)
}

// checkRoute enforces which fields each route kind carries.
func checkRoute(r *Record) error {
	switch r.Route {
	case RouteNone:
		switch {
		case r.Tier != "":
			return &fieldError{"tier", ErrInconsistent}
		case r.Member != "":
			return &fieldError{"member", ErrInconsistent}
		case r.Strategy != StrategyNone:
			return &fieldError{"strategy", ErrInconsistent}
		case r.Attempts != 0:
			return &fieldError{"attempts", ErrInconsistent}
		}
	case RouteDirect:
		switch {
		case r.Tier == "":
			return &fieldError{"tier", ErrInconsistent}
		case r.Member != "":
			return &fieldError{"member", ErrInconsistent}
		case r.Strategy != StrategyNone:
			return &fieldError{"strategy", ErrInconsistent}
		}
	case RouteReplica:
		switch {
		case r.Tier == "":
			return &fieldError{"tier", ErrInconsistent}
		case r.Strategy == StrategyNone:
			return &fieldError{"strategy", ErrInconsistent}
		case r.Attempts == 1 && r.Member == "":
			return &fieldError{"member", ErrInconsistent}
		}
	}
	return nil
}

// normalized is a record ready for storage plus what normalization changed.
type normalized struct {
	rec               Record
	replacedIDs       int
	evidenceDiscarded bool
}

// normalize is the one storage rule shared by the ring, the sink, Line and Summarize:
// sanitize IDs, put Start in UTC without a monotonic reading (as it serializes), refuse
// broken invariants, and keep the evidence only as a validated private copy.
func normalize(r Record) (normalized, error) {
	n := normalized{rec: r}
	n.replacedIDs = sanitizeIDs(&n.rec)
	n.rec.Start = n.rec.Start.UTC()
	if err := checkFields(&n.rec); err != nil {
		return n, err
	}
	if r.ReplicaScheduler != nil {
		d, err := copyEvidence(&n.rec, *r.ReplicaScheduler)
		if err != nil {
			n.rec.ReplicaScheduler = nil
			n.evidenceDiscarded = true
		} else {
			n.rec.ReplicaScheduler = &d
		}
	}
	return n, nil
}

// clone returns r with its own copy of the evidence, so a caller overwriting
// *ReplicaScheduler cannot reach stored state.
func (r Record) clone() Record {
	if r.ReplicaScheduler != nil {
		d := *r.ReplicaScheduler
		r.ReplicaScheduler = &d
	}
	return r
}

// ConfigDigestLen is the length of a record's config_digest: 16 lowercase hex digits.
const ConfigDigestLen = 16

// validDigest: exactly ConfigDigestLen lowercase hex digits.
func validDigest(s string) bool {
	if len(s) != ConfigDigestLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
