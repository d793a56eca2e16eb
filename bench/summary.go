package bench

import (
	"encoding/json"
	"io"
)

// Report is what the bench prints and writes for a header and its records: one target's Result,
// or, for a header naming two targets (direct, then routed), both and their Comparison.
type Report struct {
	Label      string
	Results    []Result    // one, or direct and routed
	Comparison *Comparison // set for a comparison
}

// NewReport computes the report of a run or a comparison from its raw header and records.
func NewReport(h RawHeader, recs []Record) *Report {
	results := Build(h, recs)
	r := &Report{Label: h.Label, Results: results}
	if len(results) == 2 {
		c := Compare(results[0], results[1])
		r.Comparison = &c
	}
	return r
}

// Text writes the terminal table.
func (r *Report) Text(w io.Writer) error {
	if r.Comparison != nil {
		return r.Comparison.Text(w)
	}
	return r.Results[0].Text(w)
}

// Markdown writes the Markdown report.
func (r *Report) Markdown(w io.Writer) error {
	if r.Comparison != nil {
		return r.Comparison.Markdown(w)
	}
	return r.Results[0].Markdown(w)
}

// JSON writes the result, or the comparison, as indented JSON.
func (r *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if r.Comparison != nil {
		return enc.Encode(r.Comparison)
	}
	return enc.Encode(r.Results[0])
}

// Figures are the report's latency CDF plots.
func (r *Report) Figures() ([]Figure, error) { return Figures(r.Label, r.Results) }
