package tracing

import (
	"reflect"
	"strings"
)

// lost is how many of an export's n spans err says were lost. A partial success (the collector took
// the batch and names how many it rejected, possibly none, with a message) loses only the rejected
// ones; any other error, the whole batch.
//
// The OTLP exporters (v1.47) report a partial success as an error of their internal PartialSuccess
// type, joined with any other error; it cannot be imported, so its exported RejectedItems field is
// read by reflection, on that type from those modules only.
func lost(err error, n int) int {
	if err == nil {
		return 0
	}
	rejected, ok := rejectedOnly(err)
	if !ok {
		return n
	}
	return int(min(max(rejected, 0), int64(n)))
}

// rejectedOnly sums the rejected spans of err's partial successes, and reports false when err holds
// anything else.
func rejectedOnly(err error) (int64, bool) {
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		var sum int64
		for _, c := range e.Unwrap() {
			r, ok := rejectedOnly(c)
			if !ok {
				return 0, false
			}
			sum += r
		}
		return sum, true
	case interface{ Unwrap() error }:
		return rejectedOnly(e.Unwrap())
	}
	v := reflect.ValueOf(err)
	t := v.Type()
	if t.Kind() != reflect.Struct || t.Name() != "PartialSuccess" ||
		!strings.HasPrefix(t.PkgPath(), "go.opentelemetry.io/otel/exporters/otlp/otlptrace/") {
		return 0, false
	}
	f := v.FieldByName("RejectedItems")
	if !f.IsValid() || f.Kind() != reflect.Int64 {
		return 0, false
	}
	return f.Int(), true
}
