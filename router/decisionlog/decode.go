package decisionlog

import (
	"time"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// The closed key sets, in canonical order (functions, so no package state is mutable).
func recordKeys() [21]string {
	return [...]string{"request_id", "start", "alias", "tier", "member", "route", "strategy",
		"outcome", "attempts", "status", "duration_ns", "first_byte_ns", "queued_ns", "ejected_members",
		"config_digest", "caller_request_id", "caller", "trace_id", "prompt_tokens", "completion_tokens", "replica_scheduler"}
}

func decisionKeys() [4]string {
	return [...]string{"selected_member_id", "reason", "eligible_member_ids", "scores"}
}

func scoreKeys() [7]string {
	return [...]string{"member_id", "local_active", "local_capacity", "upstream_unknown",
		"upstream_pressure_ppm", "freshness", "rotating_rank"}
}

// optionalRecordKey reports the keys that may be absent: the writer omits them when empty.
func optionalRecordKey(k string) bool {
	return k == "queued_ns" || k == "ejected_members" || k == "config_digest" || k == "caller_request_id" ||
		k == "caller" || k == "trace_id" || usageKey(k) || k == "replica_scheduler"
}

// required is the optional-key predicate of an object whose keys are all required.
func required(string) bool { return false }

// decodeRecord decodes one line into a record, checking key sets, types and enum
// spellings. Semantic checks follow in parseLine.
func decodeRecord(line []byte) (Record, error) {
	t := newTokens(line)
	var r Record
	keys := recordKeys()
	usage := 0 // usage keys seen: both or neither
	err := t.object("", keys[:], optionalRecordKey, func(i int, p string) error {
		usage += usageKeyCount(keys[i])
		return t.recordField(&r, keys[i], p)
	})
	if err == nil && usage == 1 {
		err = &fieldError{"prompt_tokens", ErrInconsistent}
	}
	if err != nil {
		return Record{}, err
	}
	return r, t.end()
}

func (t tokens) recordField(r *Record, key, p string) error {
	var err error
	var s string
	var v int64
	switch key {
	case "request_id":
		r.RequestID, err = t.str(p)
	case "alias":
		r.Alias, err = t.str(p)
	case "tier":
		r.Tier, err = t.str(p)
	case "member":
		r.Member, err = t.str(p)
	case "start":
		if s, err = t.str(p); err == nil {
			r.Start, err = parseStart(s, p)
		}
	case "route":
		s, err = t.enum(p, func(s string) bool { return Route(s).Valid() })
		r.Route = Route(s)
	case "strategy":
		s, err = t.enum(p, func(s string) bool { return Strategy(s).Valid() })
		r.Strategy = Strategy(s)
	case "outcome":
		s, err = t.enum(p, func(s string) bool { return Outcome(s).Valid() })
		r.Outcome = Outcome(s)
	case "attempts":
		v, _, err = t.integer(p, 0, 1, false)
		r.Attempts = int(v)
	case "status":
		v, _, err = t.integer(p, 0, 599, false)
		r.Status = int(v)
	case "duration_ns":
		v, _, err = t.integer(p, 0, int64(MaxDuration), false)
		r.Duration = time.Duration(v)
	case "first_byte_ns":
		v, _, err = t.integer(p, 0, int64(MaxDuration), false)
		r.FirstByte = time.Duration(v)
	case "queued_ns":
		v, _, err = t.integer(p, 1, int64(MaxDuration), false)
		r.Queued = time.Duration(v)
	case "ejected_members":
		v, _, err = t.integer(p, 1, ident.MaxMembers-1, false)
		r.EjectedMembers = int(v)
	case "caller_request_id":
		if r.CallerRequestID, err = t.str(p); err == nil && !ident.ValidRequestID(r.CallerRequestID) {
			err = &fieldError{p, ErrInvalidValue} // present means kept: never empty, never InvalidMarker
		}
	case "caller":
		if r.Caller, err = t.str(p); err == nil && !ident.ValidID(r.Caller) {
			err = &fieldError{p, ErrInvalidValue} // present means known: never empty, never InvalidMarker
		}
	case "trace_id": // present means known: never empty
		if r.TraceID, err = t.str(p); err == nil && (r.TraceID == "" || !validTraceID(r.TraceID)) {
			err = &fieldError{p, ErrInvalidValue}
		}
	case "prompt_tokens", "completion_tokens":
		err = t.usageField(&r.Usage, key, p)
	case "config_digest":
		if r.ConfigDigest, err = t.str(p); err == nil && !validDigest(r.ConfigDigest) {
			err = &fieldError{p, ErrInvalidValue}
		}
	case "replica_scheduler":
		var d scheduler.Decision
		if d, err = t.decision(p); err == nil {
			r.ReplicaScheduler = &d
		}
	}
	return err
}

func (t tokens) enum(path string, valid func(string) bool) (string, error) {
	s, err := t.str(path)
	if err == nil && !valid(s) {
		err = &fieldError{path, ErrInvalidValue}
	}
	return s, err
}

func parseStart(s, path string) (time.Time, error) {
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, &fieldError{path, ErrInvalidValue}
	}
	return ts.UTC(), nil
}

// decision decodes replica_scheduler and reconstitutes it through the scheduler's
// constructors; a value they refuse is invalid.
func (t tokens) decision(path string) (scheduler.Decision, error) {
	var (
		selected string
		reason   scheduler.Reason
		eligible []string
		scores   []scheduler.Score
	)
	keys := decisionKeys()
	err := t.object(path, keys[:], required, func(i int, p string) error {
		switch i {
		case 0:
			s, err := t.str(p)
			selected = s
			return err
		case 1:
			s, err := t.str(p)
			if err != nil {
				return err
			}
			if reason, err = scheduler.ParseReason(s); err != nil {
				return &fieldError{p, ErrInvalidValue}
			}
			return nil
		case 2:
			eligible = []string{}
			return t.array(p, func(_ int, ip string) error {
				s, err := t.str(ip)
				if err == nil && !ident.ValidID(s) {
					err = &fieldError{ip, ErrInvalidValue}
				}
				eligible = append(eligible, s)
				return err
			})
		default:
			return t.array(p, func(_ int, ip string) error {
				s, err := t.score(ip)
				scores = append(scores, s)
				return err
			})
		}
	})
	if err != nil {
		return scheduler.Decision{}, err
	}
	d, err := scheduler.NewDecision(selected, true, reason, eligible, scores)
	if err != nil {
		return scheduler.Decision{}, &fieldError{path, ErrInconsistent}
	}
	return d, nil
}

func (t tokens) score(path string) (scheduler.Score, error) {
	var (
		id                    string
		active, capacity, ppm int64
		rank                  int64
		unknown, hasPPM       bool
		fresh                 scheduler.Freshness
	)
	keys := scoreKeys()
	err := t.object(path, keys[:], required, func(i int, p string) error {
		var err error
		switch i {
		case 0:
			if id, err = t.str(p); err == nil && !ident.ValidID(id) {
				err = &fieldError{p, ErrInvalidValue}
			}
		case 1:
			active, _, err = t.integer(p, 0, scheduler.MaxActive, false)
		case 2:
			capacity, _, err = t.integer(p, 1, ident.MaxCeiling, false)
		case 3:
			unknown, err = t.boolean(p)
		case 4:
			ppm, hasPPM, err = t.integer(p, 0, scheduler.MaxPressurePPM, true)
		case 5:
			var s string
			if s, err = t.str(p); err == nil {
				if fresh, err = scheduler.ParseFreshness(s); err != nil {
					err = &fieldError{p, ErrInvalidValue}
				}
			}
		default:
			rank, _, err = t.integer(p, 0, ident.MaxMembers-1, false)
		}
		return err
	})
	if err != nil {
		return scheduler.Score{}, err
	}
	s, err := scheduler.NewScore(id, active, capacity, unknown, ppm, hasPPM, fresh, int(rank))
	if err != nil {
		return scheduler.Score{}, &fieldError{path, ErrInconsistent}
	}
	return s, nil
}

func indexOf(keys []string, k string) int {
	for i, s := range keys {
		if s == k {
			return i
		}
	}
	return -1
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
