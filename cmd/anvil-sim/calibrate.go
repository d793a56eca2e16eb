package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/engine/profile"
	"github.com/anvil-llm/anvil/internal/ceiling"
	"github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/internal/figure"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim/calibrate"
)

// calibrateFlags are anvil-sim calibrate's flags.
type calibrateFlags struct {
	profile, workload, slo    string
	seed                      uint64
	maxCeiling, step, windows int
	window                    time.Duration
	tolerance, kneeShare      float64
	json, markdown, plots     string
}

func newCalibrate() *cobra.Command {
	var f calibrateFlags
	cmd := &cobra.Command{
		Use:   "calibrate --profile P --workload W [--slo ttft=500ms,tpot=50ms]",
		Short: "Sweep one member's ceiling over the engine model and recommend its max_concurrency",
		Long: `Sweep one member's ceiling over the engine model of profile P: at each ceiling C, a closed loop
holds exactly C streamed requests on one virtual engine (the workload's prompt and output lengths,
seeded), window after window of virtual time until two consecutive windows after the first agree
within the tolerance. Prints per ceiling the output-token throughput, requests and goodput per
second (under the SLO), and over the requests that ended in the measured windows (the samples) the
p50 and p99 of their TTFT and of their TPOT (time per output token, each request's mean gap after
its first token: the qualification gate's tpot_p99), the knee (the smallest ceiling reaching the
knee share of the best throughput), the SLO limit (the largest ceiling whose TTFT and TPOT p99, and
every smaller ceiling's, meet the SLO) and the recommended max_concurrency: the smaller of the two.
The workload is an embedded scenario's or a scenario file's; the seed is its unless --seed is given.
Same options, same bytes. See docs/benchmarks/methodology.md, "Ceiling calibration".`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCalibrate(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.profile, "profile", profile.Default, "the engine profile: "+fmt.Sprint(profile.Names()))
	fl.StringVar(&f.workload, "workload", "", "an embedded scenario's name or a scenario file: the prompt and output lengths (required)")
	fl.StringVar(&f.slo, "slo", "", "p99 targets, e.g. ttft=500ms,tpot=50ms (keys ttft and tpot, time per output token; empty: none, the knee is recommended)")
	fl.Uint64Var(&f.seed, "seed", 0, "override the scenario's seed (0 keeps it)")
	fl.IntVar(&f.maxCeiling, "max-ceiling", 0, "the largest swept ceiling (0: a quarter past the profile's max_num_seqs)")
	fl.IntVar(&f.step, "step", 0, "sweep 1, step, 2*step, ... up to --max-ceiling (0: about 32 steps, max_num_seqs included)")
	fl.DurationVar(&f.window, "window", 0, "one measurement window of virtual time (0: about five request cycles at the largest ceiling)")
	fl.IntVar(&f.windows, "max-windows", 0, "the most windows a ceiling is held, the warm-up one included (0: 10)")
	fl.Float64Var(&f.tolerance, "tolerance", 0, "stability: two windows' throughputs differ by less than this share (0: 0.05)")
	fl.Float64Var(&f.kneeShare, "knee-share", 0, "the knee: the smallest ceiling reaching this share of the best throughput (0: 0.95)")
	fl.StringVar(&f.json, "json", "", "write the JSON report to this file")
	fl.StringVar(&f.markdown, "markdown", "", "write the Markdown report to this file")
	fl.StringVar(&f.plots, "plots", "", "write the latency-against-throughput plot (PNG and SVG) into this directory")
	return cmd
}

func runCalibrate(cmd *cobra.Command, f *calibrateFlags) error {
	o, err := f.options()
	if err != nil {
		return err
	}
	r, err := calibrate.Run(o)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	if err := r.Text(cmd.OutOrStdout()); err != nil {
		return err
	}
	if err := writeFiles(f.json, r.JSON, f.markdown, r.Markdown); err != nil {
		return err
	}
	if f.plots == "" {
		return nil
	}
	return writeCalibrationPlot(r, f.plots)
}

func (f *calibrateFlags) options() (calibrate.Options, error) {
	if f.workload == "" {
		return calibrate.Options{}, cli.Usagef("--workload is required: an embedded scenario's name or a scenario file")
	}
	p, err := profile.Lookup(f.profile)
	if err != nil {
		return calibrate.Options{}, cli.Usagef("--profile: %w", err)
	}
	slo, err := ceiling.ParseSLO(f.slo)
	if err != nil {
		return calibrate.Options{}, cli.Usagef("--slo: %w", err)
	}
	sc, err := loadScenario(f.workload, scenarios.Override{})
	if err != nil {
		return calibrate.Options{}, err
	}
	o := calibrate.Options{Profile: p, Workload: sc.Workload, WorkloadName: sc.Name, Seed: sc.Seed, SLO: slo,
		Window: f.window, MaxWindows: f.windows, Tolerance: f.tolerance, KneeShare: f.kneeShare}
	if f.seed != 0 {
		o.Seed = f.seed
	}
	switch {
	case f.maxCeiling < 0 || f.maxCeiling > calibrate.MaxCeiling:
		return o, cli.Usagef("--max-ceiling must be from 1 to %d", calibrate.MaxCeiling)
	case f.step < 0:
		return o, cli.Usagef("--step must be at least 1")
	case f.maxCeiling > 0 || f.step > 0:
		top := f.maxCeiling
		if top == 0 {
			def := calibrate.DefaultCeilings(p)
			top = def[len(def)-1]
		}
		o.Ceilings = ceiling.Steps(max(f.step, 1), top)
	}
	return o, nil
}

func writeCalibrationPlot(r *calibrate.Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fig, err := r.Figure()
	if err != nil {
		return err
	}
	for _, format := range []string{figure.PNG, figure.SVG} {
		path := filepath.Join(dir, fig.Name+"."+format)
		if err := cli.WriteFile(path, func(w io.Writer) error { return fig.WriteTo(w, format) }); err != nil {
			return err
		}
	}
	return nil
}
