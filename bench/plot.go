package bench

import (
	"errors"
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot formats.
const (
	FormatPNG = "png"
	FormatSVG = "svg"
)

// ErrFormat is returned for a plot format other than png and svg.
var ErrFormat = errors.New("bench: plot format must be png or svg")

// cdfPoints bounds the points of one CDF line.
const cdfPoints = 500

// Figure is one plot, ready to be written in either format.
type Figure struct {
	Name string // file stem: "<label>-latency-cdf", "<label>-itl-cdf"
	plot *plot.Plot
}

// WriteTo writes the figure as format (png or svg), 8 by 4.5 inches.
func (f Figure) WriteTo(w io.Writer, format string) error {
	if format != FormatPNG && format != FormatSVG {
		return ErrFormat
	}
	wt, err := f.plot.WriterTo(8*vg.Inch, 4.5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("bench: render %s: %w", f.Name, err)
	}
	_, err = wt.WriteTo(w)
	return err
}

// Figures draws the latency CDFs of results built in this process (a result read back from JSON
// has no samples): TTFT and end-to-end latency in one figure, TPOT and ITL in another, one line
// per target and metric, on a log axis so milliseconds and seconds share it.
func Figures(label string, results []Result) ([]Figure, error) {
	var out []Figure
	for _, g := range []struct {
		stem, title string
		metrics     []string
	}{
		{"latency-cdf", "TTFT and end-to-end latency", []string{"ttft", "e2el"}},
		{"token-cdf", "TPOT and inter-token latency", []string{"tpot", "itl"}},
	} {
		f, err := cdfFigure(label+"-"+g.stem, label+": "+g.title+" CDF", results, g.metrics)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func cdfFigure(name, title string, results []Result, metrics []string) (Figure, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "latency (ms, log scale)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Label.Text = "fraction of successful requests"
	p.Legend.Top = false
	p.Legend.Left = false
	lines := 0
	for i := range results {
		r := &results[i]
		for k, m := range latencyMetrics() {
			if !contains(metrics, m.name) {
				continue
			}
			xys := cdf(m.sample(&r.samples))
			if len(xys) == 0 {
				continue
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return Figure{}, fmt.Errorf("bench: cdf plot: %w", err)
			}
			line.Color = plotutil.Color(i)
			line.Dashes = plotutil.Dashes(k)
			p.Add(line)
			p.Legend.Add(r.Target.Name+" "+m.name, line)
			lines++
		}
	}
	if lines == 0 {
		// An empty log axis cannot be drawn: a run without successes gets a linear, empty frame.
		p.X.Scale, p.X.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
		p.X.Min, p.X.Max = 0, 1
	}
	p.Y.Min, p.Y.Max = 0, 1
	return Figure{Name: name, plot: p}, nil
}

// cdf returns at most cdfPoints points (value, cumulative fraction) of a sorted sample, dropping
// zeros (a log axis has none).
func cdf(sorted []float64) plotter.XYs {
	if len(sorted) == 0 {
		return nil
	}
	total := float64(len(sorted))
	step := max(len(sorted)/cdfPoints, 1)
	var xys plotter.XYs
	add := func(i int) {
		if sorted[i] > 0 {
			xys = append(xys, plotter.XY{X: sorted[i], Y: float64(i+1) / total})
		}
	}
	for i := 0; i < len(sorted); i += step {
		add(i)
	}
	if last := len(sorted) - 1; last%step != 0 {
		add(last)
	}
	return xys
}
