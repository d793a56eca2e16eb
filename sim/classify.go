package sim

import "github.com/anvil-llm/anvil/router/decisionlog"

// Classify reports one virtual attempt's ending to decisionlog.Terminal, the relay's own
// classification, and returns the outcome and the status the client got. e is what happened on
// the wire in decisionlog's vocabulary; stream says the response is an SSE stream; firstEvent says at
// least one SSE event already reached the client, which commits the 200 headers, so later failures
// end the stream in-band and the status stays 200. upstreamStatus is the member's status for
// decisionlog.EndHTTPError.
//
// The one piece of knowledge added here is the wire's: a connection that breaks before the first
// body byte leaves the relay nothing to frame, so a cut then is a transport failure, even when SSE
// headers already arrived. simrelay_test.go at the module root pins that mapping against the real
// relay over loopback.
func Classify(e decisionlog.Ending, stream, firstEvent bool, upstreamStatus int) (decisionlog.Outcome, int) {
	wrote := 0
	switch {
	case e == decisionlog.EndHTTPError:
		wrote = upstreamStatus
	case e == decisionlog.EndComplete || stream && firstEvent:
		wrote = 200
	case e == decisionlog.EndCut:
		e = decisionlog.EndTransport
	}
	return decisionlog.Terminal(e, wrote)
}
