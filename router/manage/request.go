// Package manage holds the one transition request of the router's operator surfaces: its grammar
// (Request, Decode, Validate, Encode), the function that sends it (Client.Transition) and the
// answer it gets (Response or a *Refusal). The server's endpoint decodes bodies with Decode; the
// CLI verbs and the MCP tool build and send them with a Client. Nothing else speaks to the
// transition endpoint, so the three faces cannot drift apart.
//
// Results and errors never carry the router's URL or the admin token: transport failures are
// reported by class with a fixed message, refusals with the server's fixed code and message.
package manage

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"github.com/anvil-llm/anvil/router/ident"
)

// Actions.
const (
	ActionStatus  = "status"
	ActionQuiesce = "quiesce"
	ActionDrain   = "drain"
	ActionReadmit = "readmit"
)

// Bounds of a request.
const (
	// MaxBodyBytes bounds a transition body; the largest valid one is under 400 bytes.
	MaxBodyBytes = 4096
	// DefaultWaitSeconds is how long a drain waits when the request names no wait.
	DefaultWaitSeconds = 60
	// MaxWaitSeconds bounds wait_seconds: an admin request is not held open longer than an hour.
	MaxWaitSeconds = 3600
)

// Request is one transition. MemberID "" addresses the tier: omitting member_id is the only way to
// address the tier, an explicit empty or null member_id is refused. Reason is the quiesce reason
// (default "operator") and, for every action, the audit log's reason. WaitSeconds applies to drain
// only (0 = DefaultWaitSeconds).
type Request struct {
	Action      string
	Tier        string
	MemberID    string
	Reason      string
	DryRun      bool
	WaitSeconds int
}

// Validate checks the request's values against the grammar, the same checks Decode applies, so a
// client refuses a request before any transport and the server before any change.
func (r Request) Validate() error {
	switch r.Action {
	case ActionStatus, ActionQuiesce, ActionDrain, ActionReadmit:
	case "":
		return ErrMissingField
	default:
		return ErrAction
	}
	switch {
	case r.Tier == "":
		return ErrMissingField
	case !ident.ValidID(r.Tier):
		return ErrTier
	case r.MemberID != "" && !ident.ValidID(r.MemberID):
		return ErrMemberID
	case r.Reason != "" && !ident.ValidReason(r.Reason):
		return ErrReason
	case r.WaitSeconds < 0 || r.WaitSeconds > MaxWaitSeconds:
		return ErrWait
	case r.WaitSeconds != 0 && r.Action != ActionDrain:
		return ErrWaitNotDrain
	}
	return nil
}

// Wait returns the drain wait in seconds, the default applied.
func (r Request) Wait() int {
	if r.WaitSeconds == 0 {
		return DefaultWaitSeconds
	}
	return r.WaitSeconds
}

// Encode returns the canonical body of a valid request: keys in a fixed order, optional fields only
// when set.
func (r Request) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(`{"action":`)
	b.WriteString(strconv.Quote(r.Action))
	b.WriteString(`,"tier":`)
	b.WriteString(strconv.Quote(r.Tier))
	if r.MemberID != "" {
		b.WriteString(`,"member_id":`)
		b.WriteString(strconv.Quote(r.MemberID))
	}
	if r.Reason != "" {
		b.WriteString(`,"reason":`)
		b.WriteString(strconv.Quote(r.Reason))
	}
	if r.DryRun {
		b.WriteString(`,"dry_run":true`)
	}
	if r.WaitSeconds != 0 {
		b.WriteString(`,"wait_seconds":`)
		b.WriteString(strconv.Itoa(r.WaitSeconds))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Decode reads a transition body strictly: one JSON object with the keys action, tier, member_id,
// reason, dry_run and wait_seconds, each at most once, none null, each of its own JSON type,
// nothing after the object; then Validate. It never panics and its errors never echo the body.
func Decode(body []byte) (Request, error) {
	if len(body) > MaxBodyBytes {
		return Request{}, ErrBodyTooLarge
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Request{}, ErrNotObject
	}
	var r Request
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Request{}, ErrNotObject
		}
		key, _ := tok.(string)
		if !isKey(key) {
			return Request{}, ErrUnknownKey
		}
		if seen[key] {
			return Request{}, ErrDuplicateKey
		}
		seen[key] = true
		if tok, err = dec.Token(); err != nil {
			return Request{}, ErrNotObject
		}
		if err := r.set(key, tok); err != nil {
			return Request{}, err
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return Request{}, ErrNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return Request{}, ErrTrailingData
	}
	if !seen["action"] || !seen["tier"] {
		return Request{}, ErrMissingField
	}
	return r, r.Validate()
}

var keys = [...]string{"action", "tier", "member_id", "reason", "dry_run", "wait_seconds"}

func isKey(k string) bool {
	for _, known := range keys {
		if k == known {
			return true
		}
	}
	return false
}

// set stores one value. A nested object or list is a wrong type: its first token is a delimiter.
func (r *Request) set(key string, tok json.Token) error {
	if tok == nil {
		return ErrNull
	}
	switch key {
	case "dry_run":
		b, ok := tok.(bool)
		if !ok {
			return ErrType
		}
		r.DryRun = b
		return nil
	case "wait_seconds":
		n, ok := tok.(json.Number)
		if !ok {
			return ErrType
		}
		return r.setWait(string(n))
	}
	s, ok := tok.(string)
	if !ok {
		return ErrType
	}
	switch key {
	case "action":
		r.Action = s
		if s == "" {
			return ErrAction
		}
	case "tier":
		r.Tier = s
		if s == "" {
			return ErrTier
		}
	case "member_id":
		if s == "" {
			return ErrMemberID // an empty member is never the tier: omit the key for that
		}
		r.MemberID = s
	case "reason":
		if s == "" {
			return ErrReason
		}
		r.Reason = s
	}
	return nil
}

// setWait accepts a plain integer literal 1-MaxWaitSeconds: no sign, fraction, exponent or leading
// zero, so every accepted body has one canonical spelling.
func (r *Request) setWait(lit string) error {
	if len(lit) == 0 || len(lit) > 4 || lit[0] == '0' {
		return ErrWait
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] < '0' || lit[i] > '9' {
			return ErrWait
		}
	}
	n, _ := strconv.Atoi(lit)
	if n > MaxWaitSeconds {
		return ErrWait
	}
	r.WaitSeconds = n
	return nil
}
