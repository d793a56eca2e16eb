package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// table is rows of cells, rendered as aligned text or as Markdown.
type table struct {
	head []string
	rows [][]string // a row of one cell is a section title
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) text(w io.Writer) error {
	widths := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		if len(r) == 1 {
			continue
		}
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	total := len(widths) - 1
	for _, wd := range widths {
		total += wd + 1
	}
	var b strings.Builder
	line := func(r []string) {
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(&b, "%-*s", widths[i]+1, c)
			} else {
				fmt.Fprintf(&b, " %*s", widths[i], c)
			}
		}
		b.WriteString("\n")
	}
	line(t.head)
	for _, r := range t.rows {
		if len(r) == 1 {
			title := " " + r[0] + " "
			pad := max(total-len(title), 4)
			b.WriteString(strings.Repeat("-", pad/2) + title + strings.Repeat("-", pad-pad/2) + "\n")
			continue
		}
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (t *table) markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.head, " | ") + " |\n|")
	for i := range t.head {
		if i == 0 {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		if len(r) == 1 {
			cells := make([]string, len(t.head))
			cells[0] = "**" + r[0] + "**"
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
			continue
		}
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
func itoa(v int) string   { return strconv.Itoa(v) }

func signed(v float64) string {
	if v >= 0 {
		return "+" + f3(v)
	}
	return f3(v)
}

func countOf(cs []Count, key string) int {
	for _, c := range cs {
		if c.Key == key {
			return c.N
		}
	}
	return 0
}

// figure is one row's value of a result.
type figure struct {
	name string
	get  func(*Result) string
	num  func(*Result) float64 // for ratios; nil for counts without a ratio
}

func resultFigures(withGoodput bool) []figure {
	fs := []figure{
		{"Requests sent", func(r *Result) string { return itoa(r.Requests) }, nil},
		{"Successful requests", func(r *Result) string { return itoa(r.Completed) }, nil},
		{"Failed requests", func(r *Result) string { return itoa(r.Failed) }, nil},
	}
	for _, o := range Outcomes()[1:] {
		fs = append(fs, figure{"  " + o.String(), func(r *Result) string { return itoa(countOf(r.Outcomes, o.String())) }, nil})
	}
	fs = append(fs,
		figure{"Benchmark duration (s)", func(r *Result) string { return f2(r.DurationS) }, nil},
		figure{"Total input tokens", func(r *Result) string { return strconv.FormatInt(r.TotalInputTokens, 10) }, nil},
		figure{"Total generated tokens", func(r *Result) string { return strconv.FormatInt(r.TotalOutputTokens, 10) }, nil},
		figure{"Request throughput (req/s)", func(r *Result) string { return f2(r.RequestThroughput) },
			func(r *Result) float64 { return r.RequestThroughput }},
	)
	if withGoodput {
		gp := func(r *Result) float64 {
			if r.RequestGoodput == nil {
				return 0
			}
			return *r.RequestGoodput
		}
		fs = append(fs, figure{"Request goodput (req/s)", func(r *Result) string { return f2(gp(r)) }, gp})
	}
	fs = append(fs,
		figure{"Output token throughput (tok/s)", func(r *Result) string { return f2(r.OutputThroughput) },
			func(r *Result) float64 { return r.OutputThroughput }},
		figure{"Total Token throughput (tok/s)", func(r *Result) string { return f2(r.TotalTokenThroughput) },
			func(r *Result) float64 { return r.TotalTokenThroughput }},
		figure{"Peak concurrent requests", func(r *Result) string { return itoa(r.PeakConcurrency) }, nil},
		figure{"Honoured Retry-After", func(r *Result) string { return itoa(r.RetryAfter) }, nil},
	)
	return fs
}

// latencyRows are one metric's statistics: name, value per result.
func latencyRows(m latencyMetric) []figure {
	upper := strings.ToUpper(m.name)
	stat := func(label string, pick func(Summary) float64) figure {
		return figure{label + " " + upper + " (ms)", func(r *Result) string { return f3(pick(m.get(r))) },
			func(r *Result) float64 { return pick(m.get(r)) }}
	}
	rows := []figure{
		{"Samples", func(r *Result) string { return itoa(m.get(r).N) }, nil},
		stat("Mean", func(s Summary) float64 { return s.Mean }),
		stat("Std", func(s Summary) float64 { return s.Std }),
		stat("Median", func(s Summary) float64 { return s.P50 }),
	}
	for i, p := range Percentiles()[1:] {
		rows = append(rows, stat("P"+pname(p), func(s Summary) float64 { return s.Values()[i+1] }))
	}
	return rows
}

func (r *Result) table() *table {
	t := &table{head: []string{"Serving Benchmark Result", r.Target.Name}}
	t.add("label", r.Label)
	if r.Scenario != "" {
		t.add("scenario / seed", r.Scenario+" / "+strconv.FormatUint(r.Seed, 10))
	} else {
		t.add("seed", strconv.FormatUint(r.Seed, 10))
	}
	if r.Target.Stopped != "" {
		t.add("stopped early", r.Target.Stopped)
	}
	for _, f := range resultFigures(r.RequestGoodput != nil) {
		t.add(f.name, f.get(r))
	}
	for _, m := range latencyMetrics() {
		t.add(m.title)
		for _, f := range latencyRows(m) {
			t.add(f.name, f.get(r))
		}
	}
	t.add("Send lag (bench)")
	t.add("P99 send lag (ms)", f3(r.SendLag.P99))
	return t
}

// Text writes the result as a terminal table, vllm bench serve's layout.
func (r *Result) Text(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "%s: %s (%s endpoint, model %s, %d URL(s))\n", r.Target.Name, r.Load, r.Endpoint, r.Target.Model, r.Target.URLs); err != nil {
		return err
	}
	return r.table().text(w)
}

// Markdown writes the result as a Markdown table.
func (r *Result) Markdown(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "## anvil-bench: %s\n\n%s; %s endpoint, model `%s`, %d URL(s).\n\n", r.Label, r.Load, r.Endpoint, r.Target.Model, r.Target.URLs); err != nil {
		return err
	}
	return r.table().markdown(w)
}

func (c *Comparison) table() *table {
	t := &table{head: []string{"Direct vs routed", "direct", "routed", "routed/direct", "added (ms)"}}
	d, r := &c.Direct, &c.Routed
	if d.Target.Stopped != "" || r.Target.Stopped != "" {
		t.add("stopped early", dash(d.Target.Stopped), dash(r.Target.Stopped), "", "")
	}
	for _, f := range resultFigures(d.RequestGoodput != nil && r.RequestGoodput != nil) {
		q := ""
		if f.num != nil {
			q = ratioString(f.num(d), f.num(r))
		}
		t.add(f.name, f.get(d), f.get(r), q, "")
	}
	for _, m := range latencyMetrics() {
		t.add(m.title)
		for i, f := range latencyRows(m) {
			if f.num == nil {
				t.add(f.name, f.get(d), f.get(r), "", "")
				continue
			}
			added := ""
			if i != 2 { // a difference of standard deviations is no added latency
				added = signed(f.num(r) - f.num(d))
			}
			t.add(f.name, f.get(d), f.get(r), ratioString(f.num(d), f.num(r)), added)
		}
	}
	t.add("Send lag (bench)")
	t.add("P99 send lag (ms)", f3(d.SendLag.P99), f3(r.SendLag.P99), "", "")
	return t
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ratioString(d, r float64) string {
	if d == 0 {
		return "-"
	}
	return f3(r / d)
}

// Text writes the comparison as a terminal table.
func (c *Comparison) Text(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "%s: %s (%s endpoint)\n  direct: model %s over %d member URL(s), client-side round robin\n  routed: model %s through %d router URL(s)\n",
		c.Label, c.Direct.Load, c.Direct.Endpoint, c.Direct.Target.Model, c.Direct.Target.URLs, c.Routed.Target.Model, c.Routed.Target.URLs); err != nil {
		return err
	}
	return c.table().text(w)
}

// Markdown writes the comparison as a Markdown table.
func (c *Comparison) Markdown(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "## anvil-bench compare: %s\n\n%s; %s endpoint. Direct: model `%s` over %d member URL(s), client-side round robin. Routed: model `%s` through the router. Added latency is routed minus direct.\n\n",
		c.Label, c.Direct.Load, c.Direct.Endpoint, c.Direct.Target.Model, c.Direct.Target.URLs, c.Routed.Target.Model); err != nil {
		return err
	}
	return c.table().markdown(w)
}
