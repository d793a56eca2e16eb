package ceiling

import (
	"encoding/json"
	"math"
)

// pointFields is Point without its methods, for the JSON codec below.
type pointFields Point

// pointJSON is Point on the wire: its latencies as numbers or null (no sample), which
// encoding/json cannot write for NaN.
type pointJSON struct {
	pointFields
	TTFTP50 *float64 `json:"ttft_p50_ms"`
	TTFTP99 *float64 `json:"ttft_p99_ms"`
	TPOTP50 *float64 `json:"tpot_p50_ms"`
	TPOTP99 *float64 `json:"tpot_p99_ms"`
}

// MarshalJSON writes a latency of no sample (NaN) as null.
func (p Point) MarshalJSON() ([]byte, error) {
	return json.Marshal(pointJSON{pointFields: pointFields(p), TTFTP50: orNull(p.TTFTP50), TTFTP99: orNull(p.TTFTP99),
		TPOTP50: orNull(p.TPOTP50), TPOTP99: orNull(p.TPOTP99)})
}

// UnmarshalJSON reads null back as NaN.
func (p *Point) UnmarshalJSON(data []byte) error {
	var w pointJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*p = Point(w.pointFields)
	p.TTFTP50, p.TTFTP99, p.TPOTP50, p.TPOTP99 = orNaN(w.TTFTP50), orNaN(w.TTFTP99), orNaN(w.TPOTP50), orNaN(w.TPOTP99)
	return nil
}

func orNull(v float64) *float64 {
	if !finite(v) {
		return nil
	}
	return &v
}

func orNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}
