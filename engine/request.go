package engine

import (
	"errors"
	"time"
)

// Sentinel errors of Submit and the control calls.
var (
	ErrInvalidRequest = errors.New("invalid request")
	ErrTooLong        = errors.New("request exceeds max_model_len")
	ErrDuplicateID    = errors.New("request id already in the engine")
	ErrInvalidControl = errors.New("invalid engine control value")
)

// Request is one generation request as the engine sees it.
type Request struct {
	ID           uint64
	PromptTokens int // >= 1
	MaxTokens    int // >= 1; PromptTokens+MaxTokens <= max_model_len
	// StopAfter is the length at which the model "naturally" emits EOS
	// (finish reason stop). 0 means never (ignore_eos, or no EOS before
	// MaxTokens). When both limits fall on the same token, length wins, as in
	// vLLM's check_stop.
	StopAfter int
	// TokenEvents asks for an EventToken for every token after the first.
	// Without it only first-token, preemption and finish events are emitted.
	TokenEvents bool
}

// EventKind says what happened to a request.
type EventKind uint8

// Event kinds. The zero value is not a valid kind.
const (
	// EventFirstToken: the first output token exists (Generated == 1).
	EventFirstToken EventKind = iota + 1
	// EventToken: one more output token (only with Request.TokenEvents).
	EventToken
	// EventFinish: the request left the engine; Reason says why. It follows
	// the event of its last token at the same instant.
	EventFinish
	// EventPreempt: the request lost its KV blocks and went back to the
	// front of the waiting queue; it will recompute its context. Tokens
	// already emitted stay emitted.
	EventPreempt
)

func (k EventKind) String() string {
	switch k {
	case EventFirstToken:
		return "first_token"
	case EventToken:
		return "token"
	case EventFinish:
		return "finish"
	case EventPreempt:
		return "preempt"
	}
	return "unknown"
}

// FinishReason is vLLM's finished_reason label.
type FinishReason uint8

// Finish reasons. FinishNone is the zero value, used by non-finish events.
const (
	FinishNone FinishReason = iota
	FinishStop
	FinishLength
	FinishAbort
)

// FinishReasons lists the reasons a request can finish with, in label order.
func FinishReasons() [3]FinishReason {
	return [3]FinishReason{FinishStop, FinishLength, FinishAbort}
}

func (r FinishReason) String() string {
	switch r {
	case FinishStop:
		return "stop"
	case FinishLength:
		return "length"
	case FinishAbort:
		return "abort"
	}
	return ""
}

// Event is one observable engine transition.
type Event struct {
	Kind      EventKind
	ID        uint64
	At        time.Time
	Generated int          // output tokens so far (after this event's token)
	Reason    FinishReason // EventFinish only
}
