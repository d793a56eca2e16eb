package fidelity

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text writes the side by side as an aligned terminal table with a verdict line.
func (r *Report) Text(w io.Writer) error {
	var b strings.Builder
	b.WriteString(r.title() + "\n\n")
	t := r.table()
	widths := make([]int, len(t.head))
	for _, row := range append([][]string{t.head}, t.rows...) {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	line := func(cells []string) {
		var l strings.Builder
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				l.WriteString("  ")
			}
			if i < t.left {
				l.WriteString(c + pad) // labels left, numbers right
			} else {
				l.WriteString(pad + c)
			}
		}
		b.WriteString("  " + strings.TrimRight(l.String(), " ") + "\n")
	}
	line(t.head)
	sep := make([]string, len(widths))
	for i, n := range widths {
		sep[i] = strings.Repeat("-", n)
	}
	line(sep)
	for _, row := range t.rows {
		line(row)
	}
	b.WriteString("\n" + r.verdict() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown writes the side by side as a Markdown section.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("## " + r.title() + "\n\n")
	t := r.table()
	cells := func(row []string) {
		b.WriteString("|")
		for _, c := range row {
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	cells(t.head)
	b.WriteString("|")
	for i := range t.head {
		if i < t.left {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, row := range t.rows {
		cells(row)
	}
	b.WriteString("\n" + r.verdict() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) title() string {
	return fmt.Sprintf("anvil-sim compare: %s, seed %d, %s s of arrivals: simulated vs real time (anvil-bench)",
		r.Scenario, r.Seed, strconv.FormatFloat(r.WindowS, 'f', -1, 64))
}

func (r *Report) verdict() string {
	if r.Passed {
		return fmt.Sprintf("Verdict: PASS, %d of %d bounded figures within their bounds (p50 10%%, p99 20%%).", r.Within, r.Bounded)
	}
	return fmt.Sprintf("Verdict: FAIL, %d of %d bounded figures within their bounds (p50 10%%, p99 20%%); the others are findings.", r.Within, r.Bounded)
}

// table is the rows as cells: strategy and figure on the left, numbers right.
type table struct {
	head []string
	rows [][]string
	left int
}

func (r *Report) table() table {
	t := table{head: []string{"strategy", "figure", "sim", "real", "real - sim", "relative", "bound", "verdict"}, left: 2}
	for _, row := range r.Rows {
		bound, verdict := "-", "-"
		if row.Bound > 0 {
			bound, verdict = "±"+percent(row.Bound, 0), row.Verdict
		}
		rel := "-"
		if row.Sim != 0 {
			rel = signedPercent(row.Relative)
		}
		name := strings.Replace(row.Figure, "_", " ", 1)
		if row.Unit != "" {
			name += " (" + row.Unit + ")"
		}
		t.rows = append(t.rows, []string{row.Strategy, name, number(row.Sim, row.Unit), number(row.Real, row.Unit),
			signed(row.Diff, row.Unit), rel, bound, verdict})
	}
	return t
}

// number prints a latency with one decimal and a count as an integer.
func number(v float64, unit string) string {
	if unit == "" {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// signed prints a difference with its sign: "+" when it is not negative (a tiny negative one keeps
// its "-", so a difference and its relative value never disagree in sign).
func signed(v float64, unit string) string {
	if v >= 0 {
		return "+" + number(v, unit)
	}
	return number(v, unit)
}

func percent(v float64, prec int) string { return strconv.FormatFloat(v*100, 'f', prec, 64) + "%" }

func signedPercent(v float64) string {
	if v >= 0 {
		return "+" + percent(v, 1)
	}
	return percent(v, 1)
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
