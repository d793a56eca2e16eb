package relay

import (
	"encoding/json"
	"errors"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// Sentinel errors carried in Result.Err. They are fixed classes: no upstream address, URL or Go error
// text ever reaches a Result.
var (
	// ErrTransport: the upstream could not be reached or the connection failed before a usable response.
	ErrTransport = errors.New("relay: upstream transport error")
	// ErrFirstByteTimeout: no response body byte arrived within Options.FirstByteTimeout.
	ErrFirstByteTimeout = errors.New("relay: upstream first byte timeout")
	// ErrTimeout: the whole attempt exceeded Options.Timeout (or the HTTP client's own timeout).
	ErrTimeout = errors.New("relay: upstream timeout")
	// ErrClientCanceled: the client's context ended or writing to the client failed.
	ErrClientCanceled = errors.New("relay: client canceled")
	// ErrShutdown is the cause the server cancels its requests' contexts with when shutdown_grace has
	// passed: an attempt whose client context ends with this cause was cut by the router, not the
	// caller (decisionlog.EndShutdown).
	ErrShutdown = errors.New("relay: router shutting down")
	// ErrResponseTooLarge: an ordinary response body exceeded Options.MaxResponseBytes.
	ErrResponseTooLarge = errors.New("relay: upstream response too large")
	// ErrUpstreamStatus: the upstream answered with a non-2xx status.
	ErrUpstreamStatus = errors.New("relay: upstream error status")
	// ErrUpstreamCredentials: an upstream with a configured key answered 401 or 403: it refused the
	// router's credential. The caller gets a fixed 502.
	ErrUpstreamCredentials = errors.New("relay: upstream refused the router's credentials")
	// ErrUpstreamKeyEcho: a keyed upstream's successful answer (its body, an SSE event, a passed-through
	// read or its Content-Type) carried the upstream key whole: the answer is replaced by a fixed error
	// before anything was written, or cut (the stream ends with a fixed error event; a passed-through
	// body sets Result.Cut) without a byte of the key reaching the caller.
	ErrUpstreamKeyEcho = errors.New("relay: upstream answer carried the upstream key")
	// ErrUpstreamErrorEvent: a well-formed SSE event reported an upstream error mid-stream.
	ErrUpstreamErrorEvent = errors.New("relay: upstream error event")
	// ErrMalformedEvent: an SSE event broke the framing rules or its data was neither [DONE] nor JSON.
	ErrMalformedEvent = errors.New("relay: malformed sse event")
	// ErrEventTooLarge: an SSE event exceeded Options.MaxEventBytes.
	ErrEventTooLarge = errors.New("relay: sse event too large")
	// ErrTruncated: the upstream stream ended (cleanly or not) before its terminal event, or a
	// passed-through body ended before its end.
	ErrTruncated = errors.New("relay: upstream stream truncated")
	// ErrRequestBody: reading Upstream.BodyStream failed, that is the caller refused its own request
	// body mid-way, before the upstream answered. Nothing was written: the caller answers.
	ErrRequestBody = errors.New("relay: request body refused")

	// errBadContentType: Upstream.ContentType is not a valid header value (a caller bug): the attempt
	// fails as a transport error before anything is sent.
	errBadContentType = errors.New("relay: invalid request content type")
	// errBadAPIKey: Upstream.APIKey is not 1-MaxAPIKeyBytes visible ASCII characters (a caller bug; the
	// config refuses such keys): the attempt fails as a transport error before anything is sent.
	errBadAPIKey = errors.New("relay: invalid upstream key")
)

// failure is how an attempt ended and why: what Result records and what the client is told. The zero
// value is a complete attempt.
type failure struct {
	end decisionlog.Ending
	err error
}

// message is the fixed, client-visible sentence for a failure answered before anything was written.
func message(f failure) string {
	switch f.end {
	case decisionlog.EndFirstByteTimeout, decisionlog.EndTimeout:
		return "the upstream server did not respond in time"
	case decisionlog.EndMalformed:
		return "the upstream server sent a malformed stream"
	case decisionlog.EndCut:
		return "the upstream stream ended before completion"
	case decisionlog.EndShutdown:
		return "the router is shutting down; retry shortly"
	case decisionlog.EndHTTPError, decisionlog.EndErrorEvent:
		switch {
		case errors.Is(f.err, ErrUpstreamCredentials):
			return "the upstream server refused the router's credentials"
		case errors.Is(f.err, ErrUpstreamKeyEcho):
			return "the upstream server's answer was withheld"
		}
		return "the upstream server returned an error"
	}
	if errors.Is(f.err, ErrResponseTooLarge) {
		return "the upstream response exceeded the size limit"
	}
	return "the upstream server could not be reached"
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

type errorEnvelope struct {
	Error errorDetail `json:"error"`
}

// errorJSON renders the OpenAI-shaped error body for f, with the outcome as its code. Only fixed strings
// go in.
func errorJSON(f failure) []byte {
	outcome, _ := decisionlog.Terminal(f.end, 0)
	b, err := json.Marshal(errorEnvelope{Error: errorDetail{Message: message(f), Type: "upstream_error", Code: string(outcome)}})
	if err != nil { // unreachable: the envelope holds only strings
		return []byte(`{"error":{"message":"upstream error","type":"upstream_error","param":null,"code":null}}`)
	}
	return b
}
