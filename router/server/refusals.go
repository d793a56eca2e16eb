package server

import (
	"errors"
	"net/http"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/audioform"
	"github.com/anvil-llm/anvil/router/request"
	"github.com/anvil-llm/anvil/router/routing"
)

// stage is where a refusal happens; each lookup reads only its own stage's rows, so an error from
// one stage never gets another stage's answer.
type stage uint8

const (
	stageRequest   stage = iota // the body, the gates and the alias (requestError)
	stageAdmission              // admission and its queue (admissionError, the refusals metric)
	stageForm                   // the audio form's rules (formError)
)

// refusal is one row of the refusal table: a sentinel of the walk, admission or the audio form, the
// answer it gets and, for admission refusals, its reason label in
// anvil_router_admission_refusals_total.
type refusal struct {
	stage stage
	err   error
	// answer is the fixed answer; an empty message means the refused error's own text, which is
	// fixed because every error matching a row wraps only fixed texts.
	answer apiError
	label  string
}

// A refused request or form shows its sentinel's text under a fixed code.
var (
	refusedRequest = apiError{http.StatusBadRequest, "", "invalid_request_error", "invalid_request"}
	refusedForm    = apiError{http.StatusBadRequest, "", "invalid_request_error", "invalid_multipart"}
	// errInvalidRequest answers a request refusal without a row: its text is never shown.
	errInvalidRequest = apiError{http.StatusBadRequest, "invalid request", "invalid_request_error", "invalid_request"}
)

func refusedGate(code string) apiError {
	return apiError{http.StatusBadRequest, "", "invalid_request_error", code}
}

// refusals is the one table from sentinel to answer and metric label. Rows are read in order and
// the first match wins, so within a stage a more specific row comes first: a gate's code before the
// generic refusals it may be wrapped with, queue full and queue timeout (both wrap
// admission.ErrExhausted) before exhausted. Sentinels without a row, and why, are listed in
// refusals_test.go.
var refusals = []refusal{
	{stage: stageRequest, err: request.ErrContextExceeded, answer: refusedGate("context_length_exceeded")},
	{stage: stageRequest, err: request.ErrOutputExceeded, answer: refusedGate("max_tokens_exceeded")},
	{stage: stageRequest, err: request.ErrToolsRefused, answer: refusedGate("tools_not_allowed")},
	{stage: stageRequest, err: request.ErrMediaRefused, answer: refusedGate("media_not_allowed")},
	{stage: stageRequest, err: request.ErrEndpointRefused, answer: refusedGate("endpoint_not_supported")},
	{stage: stageRequest, err: routing.ErrUnknownAlias, answer: errUnknownAlias},
	{stage: stageRequest, err: request.ErrBadJSON, answer: refusedRequest},
	{stage: stageRequest, err: request.ErrMissingModel, answer: refusedRequest},
	{stage: stageRequest, err: request.ErrBadField, answer: refusedRequest},
	{stage: stageRequest, err: request.ErrMissingInput, answer: refusedRequest},
	{stage: stageRequest, err: request.ErrBadMaxTokens, answer: refusedRequest},
	{stage: stageRequest, err: request.ErrDuplicateField, answer: refusedRequest},
	{stage: stageRequest, err: request.ErrFoldedKey, answer: refusedRequest},

	{stage: stageAdmission, err: admission.ErrQuiesced, answer: errQuiesced, label: "quiesced"},
	{stage: stageAdmission, err: admission.ErrQueueFull, answer: errExhausted, label: "queue_full"},
	{stage: stageAdmission, err: routing.ErrQueueTimeout, answer: errExhausted, label: "queue_timeout"},
	{stage: stageAdmission, err: admission.ErrExhausted, answer: errExhausted, label: "exhausted"},
	{stage: stageAdmission, err: routing.ErrShuttingDown, answer: errShuttingDown, label: "shutdown"},

	{stage: stageForm, err: audioform.ErrNotMultipart, answer: refusedForm},
	{stage: stageForm, err: audioform.ErrMalformed, answer: refusedForm},
	{stage: stageForm, err: audioform.ErrMissingModel, answer: refusedForm},
	{stage: stageForm, err: audioform.ErrBadModel, answer: refusedForm},
	{stage: stageForm, err: audioform.ErrDuplicateModel, answer: refusedForm},
	{stage: stageForm, err: audioform.ErrModelAfterFile, answer: refusedForm},
	{stage: stageForm, err: audioform.ErrDuplicateFile, answer: refusedForm},
	{stage: stageForm, err: audioform.ErrFieldTooLarge, answer: refusedForm},
	{stage: stageForm, err: audioform.ErrTooManyParts, answer: refusedForm},
	{stage: stageForm, err: audioform.ErrBadPartName, answer: refusedForm},
}

// refusalOf returns the first row of stage s that err matches.
func refusalOf(s stage, err error) (refusal, bool) {
	for _, r := range refusals {
		if r.stage == s && errors.Is(err, r.err) {
			if r.answer.message == "" {
				r.answer.message = err.Error()
			}
			return r, true
		}
	}
	return refusal{}, false
}

// requestError maps a parse, gate or alias refusal to its fixed answer; anything else is a 400 that
// never shows its text.
func requestError(err error) apiError {
	if r, ok := refusalOf(stageRequest, err); ok {
		return r.answer
	}
	return errInvalidRequest
}

// admissionError maps an admission refusal. Quiesced and exhausted are 503 with Retry-After: nothing
// was reserved and the caller may come back. Anything else is an internal error.
func admissionError(err error) apiError {
	if r, ok := refusalOf(stageAdmission, err); ok {
		return r.answer
	}
	return errInternal
}

// refusalLabel is an admission refusal's reason label in the refusals metric.
func refusalLabel(err error) string {
	if r, ok := refusalOf(stageAdmission, err); ok {
		return r.label
	}
	return "other"
}
