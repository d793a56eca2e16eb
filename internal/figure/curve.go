package figure

import (
	"fmt"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/anvil-llm/anvil/internal/ceiling"
)

// Calibration is the plot of a ceiling sweep: TTFT and TPOT p99 (and p50, dashed) against output
// throughput, one marker per swept ceiling, labelled with it, and the recommended ceiling ringed. A
// knee shows as the curve turning upwards: throughput stops growing while latency still does.
func Calibration(name, title string, points []ceiling.Point, recommended int) (Figure, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "output throughput (tokens/s)"
	p.Y.Label.Text = "latency (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	series := []struct {
		legend string
		y      func(ceiling.Point) float64
		color  int
		dashes int
	}{
		{"TTFT p99", func(q ceiling.Point) float64 { return q.TTFTP99 }, 0, 0},
		{"TTFT p50", func(q ceiling.Point) float64 { return q.TTFTP50 }, 0, 1},
		{"TPOT p99", func(q ceiling.Point) float64 { return q.TPOTP99 }, 1, 0},
		{"TPOT p50", func(q ceiling.Point) float64 { return q.TPOTP50 }, 1, 1},
	}
	lines := 0
	for _, s := range series {
		xys := curvePoints(points, s.y)
		if len(xys) == 0 {
			continue
		}
		lines++
		line, marks, err := plotter.NewLinePoints(xys)
		if err != nil {
			return Figure{}, fmt.Errorf("calibration plot: %w", err)
		}
		line.Color, line.Dashes, marks.Color = plotutil.Color(s.color), plotutil.Dashes(s.dashes), plotutil.Color(s.color)
		p.Add(line, marks)
		p.Legend.Add(s.legend, line, marks)
	}
	if lines == 0 {
		// Nothing above zero to put on a log axis (gonum panics drawing an empty one): an empty,
		// linear frame, as an empty CDF is.
		p.Y.Scale, p.Y.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
		p.Y.Min, p.Y.Max = 0, 1
		return Figure{Name: name, Plot: p}, nil
	}
	if err := addCeilingLabels(p, points, recommended); err != nil {
		return Figure{}, err
	}
	return Figure{Name: name, Plot: p}, nil
}

// curvePoints keeps the points a log axis can show (latency above zero).
func curvePoints(points []ceiling.Point, y func(ceiling.Point) float64) plotter.XYs {
	var xys plotter.XYs
	for _, q := range points {
		if v := y(q); v > 0 {
			xys = append(xys, plotter.XY{X: q.Throughput, Y: v})
		}
	}
	return xys
}

// addCeilingLabels writes each ceiling beside its TTFT p99 marker and rings the recommended one.
func addCeilingLabels(p *plot.Plot, points []ceiling.Point, recommended int) error {
	var xys plotter.XYs
	var labels []string
	var ring plotter.XYs
	for _, q := range points {
		if q.TTFTP99 <= 0 {
			continue
		}
		xys = append(xys, plotter.XY{X: q.Throughput, Y: q.TTFTP99})
		labels = append(labels, strconv.Itoa(q.Ceiling))
		if q.Ceiling == recommended {
			ring = append(ring, plotter.XY{X: q.Throughput, Y: q.TTFTP99})
		}
	}
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return fmt.Errorf("calibration plot: %w", err)
	}
	l.Offset = vg.Point{X: vg.Points(3), Y: vg.Points(3)}
	p.Add(l)
	if len(ring) > 0 {
		s, err := plotter.NewScatter(ring)
		if err != nil {
			return fmt.Errorf("calibration plot: %w", err)
		}
		s.GlyphStyle.Shape, s.GlyphStyle.Radius = plotutil.Shape(0), vg.Points(7)
		s.GlyphStyle.Color = plotutil.Color(2)
		p.Add(s)
		p.Legend.Add("recommended ceiling "+strconv.Itoa(recommended), s)
	}
	return nil
}
