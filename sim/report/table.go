package report

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// table is rendered either as aligned plain text (terminal) or as a Markdown table.
type table struct {
	head []string
	rows [][]string
	left int // leading text columns, left-aligned (at least the first); the rest are numbers
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) text(b *strings.Builder, indent string) {
	widths := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	line := func(cells []string) {
		var l strings.Builder
		l.WriteString(indent)
		for i, c := range cells {
			if i > 0 {
				l.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < max(t.left, 1) {
				l.WriteString(c + pad) // labels left, numbers right
			} else {
				l.WriteString(pad + c)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteString("\n")
	}
	line(t.head)
	sep := make([]string, len(widths))
	for i, w := range widths {
		sep[i] = strings.Repeat("-", w)
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
}

func (t *table) markdown(b *strings.Builder) {
	cells := func(r []string) {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	cells(t.head)
	b.WriteString("|")
	for i := range t.head {
		if i < max(t.left, 1) {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		cells(r)
	}
}

// f formats a number with prec decimals.
func f(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// ms formats seconds as milliseconds.
func ms(v float64) string { return f(v*1000, 1) }

func u(v uint64) string { return strconv.FormatUint(v, 10) }

func i64(v int64) string { return strconv.FormatInt(v, 10) }

func pct(v float64) string { return f(v*100, 1) + "%" }
