// Package figure holds what the simulator's and the bench's reports draw with: a gonum plot written
// as PNG or SVG at one size, and latency CDFs on a log axis (milliseconds and seconds share it).
package figure

import (
	"errors"
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Formats a figure is written in.
const (
	PNG = "png"
	SVG = "svg"
)

// ErrFormat is returned for a format other than PNG and SVG.
var ErrFormat = errors.New("plot format must be png or svg")

// maxCDFPoints bounds the points of one CDF line.
const maxCDFPoints = 500

// Figure is one plot, ready to be written in either format.
type Figure struct {
	Name string // file stem
	Plot *plot.Plot
}

// WriteTo writes the figure as format (PNG or SVG), 8 by 4.5 inches.
func (f Figure) WriteTo(w io.Writer, format string) error {
	if format != PNG && format != SVG {
		return ErrFormat
	}
	wt, err := f.Plot.WriterTo(8*vg.Inch, 4.5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("render %s: %w", f.Name, err)
	}
	_, err = wt.WriteTo(w)
	return err
}

// CDF is a figure of cumulative distributions on a log x axis, one line per sample.
type CDF struct {
	p     *plot.Plot
	lines int
}

// NewCDF starts a CDF figure; xLabel names the unit ("latency (ms, log scale)").
func NewCDF(title, xLabel string) *CDF {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Label.Text = "fraction of successful requests"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = false
	p.Legend.Left = false
	return &CDF{p: p}
}

// Add draws the CDF of an ascending sample as a line in colour and dash pattern number color and
// dashes (plotutil's palettes), named legend in the legend. A sample with no value above zero (a log
// axis has none) adds nothing.
func (c *CDF) Add(legend string, sorted []float64, color, dashes int) error {
	xys := Points(sorted)
	if len(xys) == 0 {
		return nil
	}
	line, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("cdf plot: %w", err)
	}
	line.Color = plotutil.Color(color)
	line.Dashes = plotutil.Dashes(dashes)
	c.p.Add(line)
	c.p.Legend.Add(legend, line)
	c.lines++
	return nil
}

// Figure returns the figure. Without a line a log axis cannot be drawn: it is then a linear, empty
// frame.
func (c *CDF) Figure(name string) Figure {
	if c.lines == 0 {
		c.p.X.Scale, c.p.X.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
		c.p.X.Min, c.p.X.Max = 0, 1
	}
	return Figure{Name: name, Plot: c.p}
}

// Points returns at most about maxCDFPoints points (value, cumulative fraction) of an ascending
// sample, always including its last, dropping values not above zero.
func Points(sorted []float64) plotter.XYs {
	if len(sorted) == 0 {
		return nil
	}
	total := float64(len(sorted))
	step := max(len(sorted)/maxCDFPoints, 1)
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
