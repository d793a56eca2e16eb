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

// SLO are the p99 latency targets a ceiling must meet; a zero target is not checked.
type SLO struct {
	TTFT time.Duration `json:"ttft_p99_ns,omitempty"`
	ITL  time.Duration `json:"itl_p99_ns,omitempty"`
}

// Set reports whether any target is set.
func (s SLO) Set() bool { return s.TTFT > 0 || s.ITL > 0 }

// Met reports whether p's p99 latencies meet every set target.
func (s SLO) Met(p Point) bool {
	if s.TTFT > 0 && !(p.TTFTP99 <= ms(s.TTFT)) {
		return false
	}
	return s.ITL <= 0 || p.ITLP99 <= ms(s.ITL)
}

// String is the SLO as ParseSLO reads it ("" when unset).
func (s SLO) String() string {
	var parts []string
	if s.TTFT > 0 {
		parts = append(parts, "ttft="+s.TTFT.String())
	}
	if s.ITL > 0 {
		parts = append(parts, "itl="+s.ITL.String())
	}
	return strings.Join(parts, ",")
}

// ParseSLO reads "ttft=500ms,itl=50ms": comma-separated key=duration pairs, keys ttft and itl (the
// p99 of time to first token and of inter-token latency), each at most once, durations in Go's
// syntax from 1µs to 1h. The empty string is the unset SLO.
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
		case "itl":
			dst = &slo.ITL
		default:
			return SLO{}, errorf("keys must be ttft or itl")
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
