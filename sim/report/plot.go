package report

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/anvil-llm/anvil/internal/figure"
)

// Plot formats.
const (
	FormatPNG = figure.PNG
	FormatSVG = figure.SVG
)

// ErrFormat is returned for a plot format other than png and svg.
var ErrFormat = figure.ErrFormat

// Figure is one plot of the report, ready to be written in either format (8 by 4.5 inches); its Name
// is the file stem: "<scenario>-<strategy>-active", "<scenario>-latency-cdf".
type Figure = figure.Figure

// Figures builds the report's plots: one active-lease timeline per run (a line per member, with
// its ceiling as the scale) and one latency CDF comparing the runs' end-to-end latency and TTFT.
// They need the in-memory report from Build (a report read back from JSON has no samples).
func (r *Report) Figures() ([]Figure, error) {
	var out []Figure
	for i := range r.Runs {
		f, err := r.Runs[i].activeFigure(r.Scenario)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	f, err := r.cdfFigure()
	if err != nil {
		return nil, err
	}
	return append(out, f), nil
}

func (run *Run) activeFigure(scenario string) (Figure, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s (%s): active leases per member", scenario, run.Strategy)
	p.X.Label.Text = "virtual time (s)"
	p.Y.Label.Text = "active leases (time-weighted mean per bucket)"
	p.Legend.Top = true
	s := run.series
	end := float64(len(s.TierMean)) * s.Bucket.Seconds()
	var top float64
	for mi, mean := range s.MemberMean {
		xys := make(plotter.XYs, len(mean))
		for b, v := range mean {
			xys[b] = plotter.XY{X: (float64(b) + 0.5) * s.Bucket.Seconds(), Y: v}
			top = max(top, v)
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return Figure{}, fmt.Errorf("report: active plot: %w", err)
		}
		line.Color = plotutil.Color(mi)
		line.Dashes = plotutil.Dashes(mi / len(plotutil.DefaultColors))
		p.Add(line)
		label := run.ids[mi]
		if c := run.Members[mi].Ceiling; c > 0 {
			// The member's ceiling as a dashed line of its colour: leases never cross it.
			ceiling, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(c)}, {X: end, Y: float64(c)}})
			if err != nil {
				return Figure{}, fmt.Errorf("report: active plot: %w", err)
			}
			ceiling.Color = line.Color
			ceiling.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
			p.Add(ceiling)
			label = fmt.Sprintf("%s (ceiling %d, dashed)", label, c)
			top = max(top, float64(c))
		}
		p.Legend.Add(label, line)
	}
	// Headroom above the highest ceiling keeps the legend off the lines.
	p.Y.Min, p.Y.Max = 0, max(top*1.3, 1)
	return Figure{Name: fmt.Sprintf("%s-%s-active", scenario, run.Strategy), Plot: p}, nil
}

func (r *Report) cdfFigure() (Figure, error) {
	// TTFT lives in milliseconds and end-to-end latency in seconds: the log axis shows both.
	c := figure.NewCDF(r.Scenario+": latency CDF per strategy", "latency (s, log scale)")
	for i := range r.Runs {
		run := &r.Runs[i]
		for k, m := range []struct {
			name string
			s    *sample
		}{{"e2e", &run.e2e}, {"ttft", &run.ttft}} {
			if err := c.Add(run.Strategy+" "+m.name, m.s.x, i, k); err != nil {
				return Figure{}, err
			}
		}
	}
	return c.Figure(r.Scenario + "-latency-cdf"), nil
}
