package config

import (
	"errors"
	"slices"
)

// ErrRestartRequired is wrapped by the error RestartRequired returns: the next configuration is valid
// but changes a setting a running router cannot change, so a reload refuses it whole.
var ErrRestartRequired = errors.New("restart required")

// RestartRequiredKeys lists the settings a running router cannot change, in schema order: the
// listeners (a bound socket cannot move), TLS switched on or off (the listener's protocol; a changed
// certificate or key file is re-read instead), the intent file (the quiesce intent of record), the
// decision log's sink, ring and line bound (records already written keep their format and file),
// the log handler (built once, before anything logs) and the tracing exporter (built once, before the
// first request).
func RestartRequiredKeys() []string {
	return []string{"listen", "tls", "log.format", "log.level", "decision_log.ring_size",
		"decision_log.jsonl_path", "decision_log.max_line_bytes", "intent_file", "metrics.listen",
		"tracing.endpoint", "tracing.protocol", "tracing.service_name", "tracing.sampler", "tracing.sampler_arg",
		"tracing.resource_attributes"}
}

// RestartRequired returns nil when every difference from old to next can be applied live, else an
// *Error naming the first key (in Diff's order) that needs a restart, with the fixed message
// "restart required", wrapping ErrRestartRequired. tls counts only when it is switched on or off.
func RestartRequired(old, next Config) error {
	keys := RestartRequiredKeys()
	for _, c := range Diff(old, next) {
		if slices.Contains(keys, c.Path) {
			return &Error{Path: c.Path, Msg: "restart required", sentinel: ErrRestartRequired}
		}
	}
	return nil
}
