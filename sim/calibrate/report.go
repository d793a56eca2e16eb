package calibrate

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anvil-llm/anvil/internal/ceiling"
	"github.com/anvil-llm/anvil/internal/figure"
)

// Format names a report's JSON format.
const Format = "anvil-sim-calibrate/1"

// Report is one sweep: what was swept, each ceiling's figures and the recommendation.
type Report struct {
	Format         string                 `json:"format"`
	Profile        string                 `json:"profile"`
	Workload       string                 `json:"workload"`
	Seed           uint64                 `json:"seed"`
	SLO            ceiling.SLO            `json:"slo"`
	SLOText        string                 `json:"slo_text"`
	Window         time.Duration          `json:"window_ns"`
	MaxWindows     int                    `json:"max_windows"`
	Tolerance      float64                `json:"tolerance"`
	KneeShare      float64                `json:"knee_share"`
	Points         []ceiling.Point        `json:"points"`
	Recommendation ceiling.Recommendation `json:"recommendation"`
}

// JSON writes the report as indented JSON.
func (r *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Text writes the report as an aligned table and the recommendation.
func (r *Report) Text(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "%s\n\n", r.title()); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(ceiling.Header(), "\t")+"\t")
	for _, p := range r.Points {
		fmt.Fprintln(tw, strings.Join(p.Cells(r.SLO), "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", r.verdict())
	return err
}

// Markdown writes the report as a Markdown section with a table.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", r.title())
	head := ceiling.Header()
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat("---:|", len(head)) + "\n")
	for _, p := range r.Points {
		b.WriteString("| " + strings.Join(p.Cells(r.SLO), " | ") + " |\n")
	}
	fmt.Fprintf(&b, "\n%s\n", r.verdict())
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) title() string {
	slo := r.SLOText
	if slo == "" {
		slo = "none"
	}
	return fmt.Sprintf("Ceiling calibration: profile %s, workload %s, seed %d, SLO %s (windows of %s, at most %d per ceiling)",
		r.Profile, r.Workload, r.Seed, slo, r.Window, r.MaxWindows)
}

func (r *Report) verdict() string {
	rec := r.Recommendation
	knee := fmt.Sprintf("Knee (smallest ceiling reaching %s%% of the best throughput): %d.", pct(r.KneeShare), rec.Knee)
	limit := fmt.Sprintf("SLO limit: %d.", rec.SLOLimit)
	if !r.SLO.Set() {
		limit = "SLO: none given, every ceiling qualifies."
	} else if !rec.SLOBroken {
		limit = fmt.Sprintf("SLO limit: %d (no swept ceiling broke it).", rec.SLOLimit)
	}
	if rec.MaxConcurrency == 0 {
		return fmt.Sprintf("%s %s No recommendation: %s.", knee, limit, rec.Reason)
	}
	return fmt.Sprintf("%s %s Recommended max_concurrency: %d (%s).", knee, limit, rec.MaxConcurrency, rec.Reason)
}

func pct(v float64) string { return strconv.FormatFloat(v*100, 'f', -1, 64) }

// Figure is the plot of latency against throughput, named "<profile>-calibration".
func (r *Report) Figure() (figure.Figure, error) {
	title := fmt.Sprintf("%s, %s: latency against throughput per ceiling", r.Profile, r.Workload)
	return figure.Calibration(r.Profile+"-calibration", title, r.Points, r.Recommendation.MaxConcurrency)
}
