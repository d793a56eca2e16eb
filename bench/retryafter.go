package bench

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anvil-llm/anvil/scenarios"
)

// retryable reports whether OpenAI's SDKs retry an answer of this status (and so honour its
// Retry-After): request timeout, conflict, rate limit and every server error.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// RetryAfter is the wait a server asks for, read as OpenAI's SDKs read it: the retry-after-ms
// header (milliseconds), else Retry-After as seconds (fractions allowed) or as an HTTP date,
// counted from now. A wait that is absent, unreadable, not positive or above MaxRetryAfter is 0:
// the SDKs then fall back to their own backoff, and so does a closed-loop client.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, ok := parseSeconds(v); ok {
			return honoured(time.Duration(ms * float64(time.Millisecond)))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, ok := parseSeconds(v); ok {
		return honoured(time.Duration(s * float64(time.Second)))
	}
	if t, err := http.ParseTime(v); err == nil {
		return honoured(t.Sub(now))
	}
	return 0
}

// parseSeconds reads a plain decimal number (no sign, exponent, hex or underscores).
func parseSeconds(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if v == "" || strings.Trim(v, "0123456789.") != "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	// Huge values are still read (they are too long to honour); capping them keeps the conversion
	// to a Duration defined.
	return math.Min(f, 1e9), true
}

func honoured(d time.Duration) time.Duration {
	if d <= 0 || d > MaxRetryAfter {
		return 0
	}
	return d
}

// pause is how long a closed-loop client waits after a request before sending its next one: the
// think time after a success; after a failure the server's Retry-After when it gave an honoured
// one, else the workload's backoff.
func pause(c *scenarios.Closed, r *Record) time.Duration {
	switch {
	case r.Outcome == OK:
		return c.Think
	case r.RetryAfter > 0:
		return r.RetryAfter
	}
	return c.Backoff
}
