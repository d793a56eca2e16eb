package ceiling

import (
	"errors"
	"strings"
	"time"
)

// ErrSLO is wrapped by every refusal of an SLO string; the message names the problem in fixed
// words and never echoes the input.
var ErrSLO = errors.New("invalid SLO")

// MaxTarget bounds one SLO target.
const MaxTarget = time.Hour

// maxSLOLen bounds an SLO string: two keys with long durations fit many times over.
const maxSLOLen = 256

// SLO are the p99 targets a ceiling must meet: of the requests' time to first token and of their
// time per output token (TPOT, each request's mean gap after its first token: vLLM's and the
// bench's goodput rule, and the qualification gate's tpot_p99). A zero target is not checked.
type SLO struct {
	TTFT time.Duration `json:"ttft_p99_ns,omitempty"`
	TPOT time.Duration `json:"tpot_p99_ns,omitempty"`
}

// Set reports whether any target is set.
func (s SLO) Set() bool { return s.TTFT > 0 || s.TPOT > 0 }

// Met reports whether p's p99 latencies meet every set target. A figure of no sample is NaN and
// meets no target: a step that measured nothing is not evidence that the SLO holds.
func (s SLO) Met(p Point) bool {
	if s.TTFT > 0 && !(p.TTFTP99 <= ms(s.TTFT)) {
		return false
	}
	return s.TPOT <= 0 || p.TPOTP99 <= ms(s.TPOT)
}

// String is the SLO as ParseSLO reads it ("" when unset).
func (s SLO) String() string {
	var parts []string
	if s.TTFT > 0 {
		parts = append(parts, "ttft="+s.TTFT.String())
	}
	if s.TPOT > 0 {
		parts = append(parts, "tpot="+s.TPOT.String())
	}
	return strings.Join(parts, ",")
}

// ParseSLO reads "ttft=500ms,tpot=50ms": comma-separated key=duration pairs, keys ttft and tpot
// (the p99 of time to first token and of time per output token), each at most once, durations in
// Go's syntax from 1µs to 1h. The empty string is the unset SLO.
func ParseSLO(s string) (SLO, error) {
	var slo SLO
	if s == "" {
		return slo, nil
	}
	if len(s) > maxSLOLen {
		return SLO{}, errorf("longer than 256 bytes")
	}
	for part := range strings.SplitSeq(s, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return SLO{}, errorf("each target must be key=duration")
		}
		var dst *time.Duration
		switch strings.TrimSpace(key) {
		case "ttft":
			dst = &slo.TTFT
		case "tpot":
			dst = &slo.TPOT
		default:
			return SLO{}, errorf("keys must be ttft or tpot")
		}
		if *dst != 0 {
			return SLO{}, errorf("a key appears twice")
		}
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if err != nil {
			return SLO{}, errorf("a target must be a duration such as 500ms")
		}
		if d < time.Microsecond || d > MaxTarget {
			return SLO{}, errorf("a target must be from 1µs to 1h")
		}
		*dst = d
	}
	return slo, nil
}

func errorf(msg string) error { return &sloError{msg} }

type sloError struct{ msg string }

func (e *sloError) Error() string { return "invalid SLO: " + e.msg }
func (e *sloError) Unwrap() error { return ErrSLO }
