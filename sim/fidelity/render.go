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
	return writeText(w, r.title(), []table{rowTable("strategy", "sim", r.Rows)}, r.tail())
}

// Markdown writes the side by side as a Markdown section.
func (r *Report) Markdown(w io.Writer) error {
	return writeMarkdown(w, r.title(), []table{rowTable("strategy", "sim", r.Rows)}, r.tail())
}

// tail is the lines under the table: the real runs' send lag, then the verdict.
func (r *Report) tail() string {
	var lags []string
	for _, run := range r.Runs {
		lags = append(lags, run.Strategy+" "+run.SendLag.String())
	}
	return "Send lag of the real runs (how late anvil-bench sent requests; it grows when the machine stalls the bench): " +
		strings.Join(lags, "; ") + ".\n" + verdictLine(r.Within, r.Bounded, r.Passed)
}

func (l Lag) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	return "p50 " + f(l.P50) + ", p99 " + f(l.P99) + ", max " + f(l.Max) + " ms"
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

func (r *Report) title() string {
	return fmt.Sprintf("anvil-sim compare: %s, seed %d, %s s of arrivals: simulated vs real time (anvil-bench)",
		r.Scenario, r.Seed, strconv.FormatFloat(r.WindowS, 'f', -1, 64))
}

// Text writes the replay: the model beside the member, then what the real path added per request.
func (r *Replayed) Text(w io.Writer) error {
	return writeText(w, r.title(), r.tables(), r.verdict())
}

// Markdown writes the replay as a Markdown section.
func (r *Replayed) Markdown(w io.Writer) error {
	return writeMarkdown(w, r.title(), r.tables(), r.verdict())
}

// WriteJSON writes the replay as indented JSON.
func (r *Replayed) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

func (r *Replayed) title() string {
	of := ""
	if r.Scenario != "" {
		of = " of " + r.Scenario
	}
	return fmt.Sprintf("anvil-sim replay: the %s run%s against one member (profile %s, step scale %s): engine model vs real time",
		r.Label, of, r.Profile, strconv.FormatFloat(r.StepScale, 'g', -1, 64))
}

func (r *Replayed) tables() []table {
	added := table{head: []string{"added by the real path (ms)", "n", "mean", "min", "p50", "p90", "p99", "max"}, left: 1}
	for _, a := range []struct {
		name string
		v    Added
	}{{"ttft", r.AddedTTFT}, {"e2e", r.AddedE2E}} {
		ms := func(v float64) string { return signed(v, "ms") }
		added.rows = append(added.rows, []string{a.name, strconv.Itoa(a.v.N), ms(a.v.Mean), ms(a.v.Min), ms(a.v.P50),
			ms(a.v.P90), ms(a.v.P99), ms(a.v.Max)})
	}
	return []table{rowTable("member", "model", r.Rows), added}
}

func (r *Replayed) verdict() string {
	return fmt.Sprintf("%d of %d measured requests replayed (%d failed, left out). Send lag (how late anvil-bench sent them): %s.\n",
		r.Replayed, r.Requests, r.Skipped, r.SendLag) + verdictLine(r.Within, r.Bounded, r.Passed)
}

func verdictLine(within, bounded int, passed bool) string {
	if passed {
		return fmt.Sprintf("Verdict: PASS, %d of %d bounded figures within their bounds (p50 10%%, p99 20%%).", within, bounded)
	}
	return fmt.Sprintf("Verdict: FAIL, %d of %d bounded figures within their bounds (p50 10%%, p99 20%%); the others are findings.", within, bounded)
}

// table is cells: the first left columns are labels (left-aligned), the rest numbers.
type table struct {
	head []string
	rows [][]string
	left int
}

// rowTable renders rows: first names the label column ("strategy"), model the predicted side ("sim").
func rowTable(first, model string, rows []Row) table {
	t := table{head: []string{first, "figure", model, "real", "real - " + model, "relative", "bound", "verdict"}, left: 2}
	for _, row := range rows {
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

func writeText(w io.Writer, title string, tables []table, tail string) error {
	var b strings.Builder
	b.WriteString(title + "\n")
	for _, t := range tables {
		b.WriteString("\n")
		t.text(&b)
	}
	b.WriteString("\n" + tail + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdown(w io.Writer, title string, tables []table, tail string) error {
	var b strings.Builder
	b.WriteString("## " + title + "\n")
	for _, t := range tables {
		b.WriteString("\n")
		t.markdown(&b)
	}
	b.WriteString("\n" + tail + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (t table) text(b *strings.Builder) {
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
				l.WriteString(c + pad)
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
}

func (t table) markdown(b *strings.Builder) {
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
