package pressure

import "github.com/anvil-llm/anvil/router/scheduler"

// Class is the outcome of one collection.
type Class uint8

const (
	// ClassOK: the page parsed and at least one pressure signal was found for the
	// served model; every found signal is well formed.
	ClassOK Class = iota
	// ClassFailed: the collection itself failed: transport error, non-200 status,
	// timeout, cancellation. Its sample is ignored.
	ClassFailed
	// ClassUnknown: the member answered but the answer is unusable: parse error,
	// oversize body, no pressure series for the served model, or a malformed signal
	// (NaN, infinity, negative, non-integral count, KV outside 0..1, duplicate
	// series, wrong metric type). Its sample still says which signals were missing
	// and which malformed, so the normalized pressure reports "invalid" exactly where
	// the page was malformed; it never becomes fresh or stale.
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

// Sample is one member's pressure signals: numbers, presence and the malformed mark
// only. No metric text, label, URL or error survives into it. A signal with
// Present=false was absent from the page; one with Malformed set was on the page but
// unreadable (scheduler.MalformedMetric, no value kept). The normalizer decides what
// partial samples mean (a missing KV signal with valid request counts still yields
// request pressure; an incomplete request pair is missing, never zero; a malformed
// signal makes the pressure unknown and is reported invalid).
type Sample struct {
	Running, Waiting, KVUsage scheduler.Metric
}
