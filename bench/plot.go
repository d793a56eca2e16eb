package bench

import (
	draw "github.com/anvil-llm/anvil/internal/figure"
)

// Plot formats.
const (
	FormatPNG = draw.PNG
	FormatSVG = draw.SVG
)

// ErrFormat is returned for a plot format other than png and svg.
var ErrFormat = draw.ErrFormat

// Figure is one plot, ready to be written in either format (8 by 4.5 inches); its Name is the file
// stem: "<label>-latency-cdf", "<label>-token-cdf".
type Figure = draw.Figure

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
	c := draw.NewCDF(title, "latency (ms, log scale)")
	for i := range results {
		r := &results[i]
		for k, m := range latencyMetrics() {
			if !contains(metrics, m.name) {
				continue
			}
			if err := c.Add(r.Target.Name+" "+m.name, m.sample(&r.samples), i, k); err != nil {
				return Figure{}, err
			}
		}
	}
	return c.Figure(name), nil
}
