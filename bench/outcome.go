package bench

import "net/http"

// Outcome is the class of a request's ending: a fixed set, so reports of different runs, targets
// and tools line up. Only OK requests enter latency figures.
type Outcome uint8

// The outcome classes, in report order.
const (
	OK        Outcome = iota // HTTP 200 with a complete, well-formed OpenAI answer
	HTTP4xx                  // any 4xx but 429
	HTTP429                  // rate limited
	HTTP503                  // refused (the router's "not admitted", a loading or dying vLLM)
	HTTP5xx                  // any 5xx but 503
	Transport                // refused or reset connection, timeout, truncated body or stream
	Malformed                // a 200 that is not an OpenAI answer: wrong type, bad JSON, bad SSE
	Canceled                 // the client gave up: scheduled cancellation, run ended or stopped
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "http_4xx", "http_429", "http_503", "http_5xx", "transport", "malformed", "canceled"}

func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "invalid"
}

// Outcomes lists every class in report order.
func Outcomes() []Outcome {
	out := make([]Outcome, numOutcomes)
	for i := range out {
		out[i] = Outcome(i)
	}
	return out
}

// ParseOutcome reads a class name.
func ParseOutcome(s string) (Outcome, bool) {
	for i, n := range outcomeNames {
		if n == s {
			return Outcome(i), true
		}
	}
	return 0, false
}

// statusOutcome classifies a response status other than 200. Statuses that are neither errors nor
// 200 (a 204, a redirect) are not OpenAI answers.
func statusOutcome(code int) Outcome {
	switch {
	case code == http.StatusTooManyRequests:
		return HTTP429
	case code == http.StatusServiceUnavailable:
		return HTTP503
	case code >= 400 && code < 500:
		return HTTP4xx
	case code >= 500 && code < 600:
		return HTTP5xx
	}
	return Malformed
}

// Detail says more about a failed request, in fixed words (never a server's text).
type Detail string

// The details a record may carry.
const (
	DetailNone            Detail = ""
	DetailConnect         Detail = "connect"          // the connection could not be made
	DetailIO              Detail = "io"               // the connection failed while sending or reading
	DetailTimeout         Detail = "timeout"          // the per-request timeout expired
	DetailTruncated       Detail = "truncated"        // the body or stream ended before its end
	DetailStatus          Detail = "status"           // an unexpected status (not 200, not an error)
	DetailContentType     Detail = "content_type"     // the wrong Content-Type for the request
	DetailJSON            Detail = "bad_json"         // a body or data frame that is not the expected JSON
	DetailSSE             Detail = "bad_sse"          // a stream that is not well-formed SSE
	DetailTooLarge        Detail = "too_large"        // a body or frame above the reader's bound
	DetailStreamError     Detail = "stream_error"     // an error event inside a 200 stream
	DetailNoTokens        Detail = "no_tokens"        // a complete stream that carried no generated text
	DetailAfterEnd        Detail = "data_after_end"   // frames after the stream's terminal frame
	DetailScheduledCancel Detail = "scheduled_cancel" // the workload's own client cancellation
	DetailRunStopped      Detail = "run_stopped"      // the run ended or was stopped with the request in flight
)

var details = []Detail{DetailNone, DetailConnect, DetailIO, DetailTimeout, DetailTruncated, DetailStatus,
	DetailContentType, DetailJSON, DetailSSE, DetailTooLarge, DetailStreamError, DetailNoTokens, DetailAfterEnd,
	DetailScheduledCancel, DetailRunStopped}

func validDetail(d Detail) bool {
	for _, v := range details {
		if v == d {
			return true
		}
	}
	return false
}
