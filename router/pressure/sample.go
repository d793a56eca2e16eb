package pressure

import "github.com/anvil-llm/anvil/router/scheduler"

// Class is the outcome of one collection.
type Class uint8

const (
	// ClassOK: the page parsed and at least one pressure signal was found for the
	// served model; every found signal is well formed.
	ClassOK Class = iota
	// ClassFailed: the collection itself failed: transport error, non-200 status,
	// timeout, cancellation.
	ClassFailed
	// ClassUnknown: the member answered but the answer is unusable: parse error,
	// oversize body, no pressure series for the served model, or a malformed value
	// (NaN, infinity, negative, non-integral count, KV outside 0..1, duplicate
	// series, wrong metric type).
	ClassUnknown
)

// String returns "ok", "failed" or "unknown" ("invalid" outside the enum).
func (c Class) String() string {
	switch c {
	case ClassOK:
		return "ok"
	case ClassFailed:
		return "failed"
	case ClassUnknown:
		return "unknown"
	}
	return "invalid"
}

// Sample is one member's normalized pressure signals: numbers and presence only.
// No metric text, label, URL or error survives into it. A signal with Present=false
// was absent from the page; the normalizer decides what partial samples mean (a
// missing KV signal with valid request counts still yields request pressure; an
// incomplete request pair is missing, never zero).
type Sample struct {
	Running, Waiting, KVUsage scheduler.Metric
}
