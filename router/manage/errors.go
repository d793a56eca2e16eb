package manage

import "net/http"

// Problem is one fixed refusal of a malformed request, with the HTTP status and the code the
// endpoint answers it with. Clients return the same values before any transport.
type Problem struct {
	Status  int
	Code    string
	Message string
}

func (p *Problem) Error() string { return p.Message }

// The request grammar's refusals.
var (
	ErrBodyTooLarge = &Problem{http.StatusRequestEntityTooLarge, "transition_body_too_large", "transition body is larger than 4096 bytes"}
	ErrNotObject    = &Problem{http.StatusBadRequest, "invalid_transition", "transition body must be one JSON object"}
	ErrTrailingData = &Problem{http.StatusBadRequest, "trailing_data", "transition body has data after its JSON object"}
	ErrUnknownKey   = &Problem{http.StatusBadRequest, "unknown_key", "transition body has an unknown key (allowed: action, tier, member_id, reason, dry_run, wait_seconds)"}
	ErrDuplicateKey = &Problem{http.StatusBadRequest, "duplicate_key", "transition body repeats a key"}
	ErrNull         = &Problem{http.StatusBadRequest, "null_value", "transition fields may not be null; omit member_id to address the whole tier"}
	ErrType         = &Problem{http.StatusBadRequest, "wrong_type", "transition field has the wrong JSON type (strings, dry_run a boolean, wait_seconds an integer)"}
	ErrMissingField = &Problem{http.StatusBadRequest, "missing_field", "action and tier are required"}
	ErrAction       = &Problem{http.StatusBadRequest, "invalid_action", "action must be status, quiesce, drain or readmit"}
	ErrTier         = &Problem{http.StatusBadRequest, "invalid_tier", "tier must be a tier ID: 1-64 characters [a-z0-9._-]"}
	ErrMemberID     = &Problem{http.StatusBadRequest, "invalid_member_id", "member_id must be a member ID: 1-64 characters [a-z0-9._-], not an address; omit it to address the whole tier"}
	ErrReason       = &Problem{http.StatusBadRequest, "invalid_reason", "reason must be a lowercase code of 1-64 characters [a-z0-9._-]"}
	ErrWait         = &Problem{http.StatusBadRequest, "invalid_wait", "wait_seconds must be an integer 1-3600"}
	ErrWaitNotDrain = &Problem{http.StatusBadRequest, "wait_not_drain", "wait_seconds applies to drain only"}
)
