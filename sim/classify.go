package sim

// Ending is how one upstream attempt stopped, as the router's relay would see it on the wire.
type Ending uint8

// Endings of an attempt.
const (
	// EndComplete: the member answered in full (an ordinary 2xx body, or a stream through [DONE]).
	EndComplete Ending = iota
	// EndHTTPError: the member answered with a non-2xx status and an error body.
	EndHTTPError
	// EndRefused: the member's connection was refused (its process is dead).
	EndRefused
	// EndCut: the member's connection broke before the response was complete (engine death,
	// a stream-close fault).
	EndCut
	// EndClientCancel: the client went away (its request context ended).
	EndClientCancel
	// EndFirstByteTimeout: no response body byte within the router's upstream first_byte_timeout.
	EndFirstByteTimeout
	// EndTimeout: the whole attempt exceeded the router's upstream timeout.
	EndTimeout
	numEndings
)

// String names the ending for test output.
func (e Ending) String() string {
	names := [numEndings]string{"complete", "http_error", "refused", "cut", "client_cancel",
		"first_byte_timeout", "timeout"}
	if e < numEndings {
		return names[e]
	}
	return "invalid"
}

// StatusClientClosed is the status recorded (never sent) when the client left before anything was
// written: the relay's and nginx's 499.
const StatusClientClosed = 499

// Classify is the relay's terminal classification of one attempt, written for the simulator: the
// outcome and the status the client got. stream says the response is an SSE stream; firstEvent
// says at least one SSE event already reached the client, which commits the 200 headers, so later
// failures end the stream in-band and the status stays 200. upstreamStatus is the member's status
// for EndHTTPError. A first-byte timeout cannot follow a first event (the relay stops that timer
// at the first byte); Classify treats it as the overall timeout then.
//
// The simulator must not import router/relay, so this table is written out independently;
// simrelay_test.go at the module root pins it against the real relay over loopback HTTP.
func Classify(e Ending, stream, firstEvent bool, upstreamStatus int) (Outcome, int) {
	committed := stream && firstEvent // headers and at least one event are on the wire
	switch e {
	case EndComplete:
		return OutcomeSuccess, 200
	case EndHTTPError:
		return OutcomeUpstreamHTTPError, upstreamStatus
	case EndCut:
		if committed {
			return OutcomeStreamTruncated, 200
		}
		// Before the first body byte the relay has nothing to frame: a broken connection is a
		// transport error, even when SSE headers already arrived.
		return OutcomeUpstreamTransportError, 502
	case EndClientCancel:
		if committed {
			return OutcomeClientCanceled, 200
		}
		return OutcomeClientCanceled, StatusClientClosed
	case EndFirstByteTimeout, EndTimeout:
		if committed {
			return OutcomeUpstreamTimeout, 200
		}
		return OutcomeUpstreamTimeout, 504
	}
	return OutcomeUpstreamTransportError, 502 // EndRefused, and any ending the relay cannot tell apart
}
