package decisionlog

// Outcome is the terminal class of a request: the one outcome type of the module. The relay
// classifies an attempt's ending into it (Terminal), the routing walk records it, and the simulator
// reports it.
type Outcome string

// The closed set of outcomes.
const (
	OutcomeSuccess                Outcome = "success"
	OutcomeRefused                Outcome = "refused"      // a request gate or validation refused it
	OutcomeNotAdmitted            Outcome = "not_admitted" // quiesced or exhausted capacity
	OutcomeUpstreamHTTPError      Outcome = "upstream_http_error"
	OutcomeUpstreamTimeout        Outcome = "upstream_timeout"
	OutcomeUpstreamTransportError Outcome = "upstream_transport_error"
	OutcomeClientCanceled         Outcome = "client_canceled"
	OutcomeMalformedStream        Outcome = "malformed_stream"
	OutcomeStreamTruncated        Outcome = "stream_truncated"
	OutcomeShutdown               Outcome = "shutdown" // cut by the router's shutdown after shutdown_grace
	// OutcomeInternalError: the router itself failed (a panic) after admission, while it held the
	// lease; the record keeps the attempt count and the selection it had reached.
	OutcomeInternalError Outcome = "internal_error"
	// OutcomeBodyRefused: the router refused the caller's streamed request body after the upstream
	// attempt had begun (an audio upload past limits.max_audio_bytes, or a form that broke its rules
	// after its head) and abandoned the attempt before the upstream had a complete request.
	OutcomeBodyRefused Outcome = "body_refused"
)

// Outcomes lists every outcome in a fixed order: reports list outcomes in this order.
func Outcomes() []Outcome {
	return []Outcome{OutcomeSuccess, OutcomeRefused, OutcomeNotAdmitted, OutcomeUpstreamHTTPError,
		OutcomeUpstreamTimeout, OutcomeUpstreamTransportError, OutcomeClientCanceled,
		OutcomeMalformedStream, OutcomeStreamTruncated, OutcomeShutdown, OutcomeInternalError,
		OutcomeBodyRefused}
}

// NumOutcomes is the number of defined outcomes.
const NumOutcomes = 12

// Index returns o's position in Outcomes, or -1 for an undefined outcome: reports count outcomes in
// arrays indexed by it.
func (o Outcome) Index() int {
	switch o {
	case OutcomeSuccess:
		return 0
	case OutcomeRefused:
		return 1
	case OutcomeNotAdmitted:
		return 2
	case OutcomeUpstreamHTTPError:
		return 3
	case OutcomeUpstreamTimeout:
		return 4
	case OutcomeUpstreamTransportError:
		return 5
	case OutcomeClientCanceled:
		return 6
	case OutcomeMalformedStream:
		return 7
	case OutcomeStreamTruncated:
		return 8
	case OutcomeShutdown:
		return 9
	case OutcomeInternalError:
		return 10
	case OutcomeBodyRefused:
		return 11
	}
	return -1
}

// Valid reports whether o is one of the defined outcomes.
func (o Outcome) Valid() bool {
	_, _, ok := o.attemptRange()
	return ok
}

// Admitted reports whether the outcome implies the request held a lease.
func (o Outcome) Admitted() bool { return o.Valid() && o != OutcomeRefused && o != OutcomeNotAdmitted }

// attemptRange is the one-attempt accounting: refusals never reach an upstream, every
// upstream-derived outcome made exactly one attempt (a shutdown cut is one: the relay sees it), and a
// cancellation or an internal error may land on either side of the attempt.
func (o Outcome) attemptRange() (lo, hi int, ok bool) {
	switch o {
	case OutcomeRefused, OutcomeNotAdmitted:
		return 0, 0, true
	case OutcomeClientCanceled, OutcomeInternalError:
		return 0, 1, true
	case OutcomeSuccess, OutcomeUpstreamHTTPError, OutcomeUpstreamTimeout,
		OutcomeUpstreamTransportError, OutcomeMalformedStream, OutcomeStreamTruncated, OutcomeShutdown,
		OutcomeBodyRefused:
		return 1, 1, true
	}
	return 0, 0, false
}

// Ending is how one upstream attempt stopped, as the relay sees it on the wire. The relay decides the
// ending of a real attempt; the simulator decides the ending of a virtual one; Terminal turns either
// into the same outcome and status.
type Ending uint8

// Endings of an attempt.
const (
	// EndComplete: the upstream answered in full: a 2xx ordinary body, or a stream through its terminal
	// event ([DONE], or a Responses terminal event followed by the end of the body).
	EndComplete Ending = iota
	// EndHTTPError: the upstream answered with a non-2xx status; the relay passes it on.
	EndHTTPError
	// EndErrorEvent: a stream carried a well-formed upstream error event, relayed in-band. It wins over
	// whatever ended the stream afterwards.
	EndErrorEvent
	// EndTransport: no usable response: the connection was refused, reset or closed before the first
	// body byte, or an ordinary body exceeded the relay's bound.
	EndTransport
	// EndCut: a stream ended (closed or reset) after its first body byte and before its terminal event.
	EndCut
	// EndMalformed: a stream broke the SSE framing rules or an event exceeded its bound.
	EndMalformed
	// EndClientCancel: the caller went away (its request context ended, or a write to it failed).
	EndClientCancel
	// EndFirstByteTimeout: no response body byte within the first-byte timeout.
	EndFirstByteTimeout
	// EndTimeout: the whole attempt exceeded the overall timeout.
	EndTimeout
	// EndShutdown: the router's shutdown cut the attempt once shutdown_grace had passed.
	EndShutdown
	// EndBodyRefused: the router stopped sending a streamed request body because the caller's body
	// broke a rule (a bound, the form grammar) before the upstream answered. The relay writes nothing:
	// the router answers the caller with its own refusal (400 or 413).
	EndBodyRefused
	numEndings
)

// String names the ending.
func (e Ending) String() string {
	names := [numEndings]string{"complete", "http_error", "error_event", "transport", "cut", "malformed",
		"client_cancel", "first_byte_timeout", "timeout", "shutdown", "body_refused"}
	if e < numEndings {
		return names[e]
	}
	return "invalid"
}

// StatusClientClosed is recorded (never sent) when the caller left before anything was written to it:
// nginx's 499.
const StatusClientClosed = 499

// Terminal classifies one attempt that ended with e. wrote is the status already sent to the caller,
// 0 when nothing was sent. It returns the request's outcome and the status the caller saw:
//
//   - once a status was sent it stands: a later failure ends the response in-band (the relay's SSE
//     error event) and the caller's status is wrote;
//   - before anything is sent, the relay answers a failure with its own fixed error: 504 for a timeout,
//     503 for a shutdown cut, 502 for a transport failure, a cut or a malformed stream; a caller who left
//     sees nothing (499); a refused request body is answered by the router, 400 unless it says otherwise
//     (413).
//
// Complete and HTTP-error answers are relayed, so their wrote is the upstream's status; an ending
// outside the enum is a transport failure.
func Terminal(e Ending, wrote int) (Outcome, int) {
	var o Outcome
	status := 502
	switch e {
	case EndComplete:
		o, status = OutcomeSuccess, 200
	case EndHTTPError, EndErrorEvent:
		o = OutcomeUpstreamHTTPError
	case EndCut:
		o = OutcomeStreamTruncated
	case EndMalformed:
		o = OutcomeMalformedStream
	case EndClientCancel:
		o, status = OutcomeClientCanceled, StatusClientClosed
	case EndFirstByteTimeout, EndTimeout:
		o, status = OutcomeUpstreamTimeout, 504
	case EndShutdown:
		o, status = OutcomeShutdown, 503
	case EndBodyRefused:
		o, status = OutcomeBodyRefused, 400
	default:
		o = OutcomeUpstreamTransportError
	}
	if wrote != 0 {
		status = wrote
	}
	return o, status
}
