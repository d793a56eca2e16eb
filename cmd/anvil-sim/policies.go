package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
	"github.com/anvil-llm/anvil/sim/policy"
	"github.com/anvil-llm/anvil/sim/report"
)

// errViolations is returned when a policy run broke a ceiling or admission did not reserve what a
// policy chose: the comparison would not be over the same walk.
var errViolations = errors.New("a policy run broke the shared walk's invariants")

// runSim runs one policy's simulation; a test replaces it to break a policy on purpose.
var runSim = sim.Run

// comparePolicies runs the scenario once per policy of list (anvil-sim compare --policies) and
// writes the policy comparison: the table on stdout, and JSON, Markdown and CDF plots on request.
func comparePolicies(cmd *cobra.Command, arg, list string, o *outputs) error {
	names, err := policy.Parse(list)
	if err != nil {
		return cli.Usagef("--policies: %w", err)
	}
	sc, err := loadScenario(arg, scenarios.Override{Duration: o.duration})
	if err != nil {
		return err
	}
	if o.seed != 0 {
		sc.Seed = o.seed
	}
	if err := checkScenario(arg, sc, strategiesOf(names)); err != nil {
		return err
	}
	var results []*sim.Result
	var w wall
	for _, name := range names {
		res, elapsed, err := runPolicy(sc, name, o, cmd.ErrOrStderr(), len(names) > 1)
		if err != nil {
			return err
		}
		w.elapsed += elapsed
		w.virtual += res.Duration
		w.requests += len(res.Requests)
		w.events += res.Events
		results = append(results, res)
	}
	r := report.Policies(sc, results)
	if err := writePolicies(r, w, o, cmd.OutOrStdout()); err != nil {
		return err
	}
	for _, row := range r.Rows {
		if row.CeilingViolations+row.Mismatches > 0 {
			return fmt.Errorf("%s: %w", row.Policy, errViolations)
		}
	}
	return nil
}

// strategiesOf are the router strategies the policies run under: every reference policy runs on
// a capacity tier.
func strategiesOf(names []string) []string {
	out := []string{scenarios.StrategyCapacity}
	for _, n := range names {
		if n == policy.RoundRobin {
			out = append(out, scenarios.StrategyRoundRobin)
		}
	}
	return out
}

// runPolicy runs one policy: the router's own strategy for capacity and round_robin, a reference
// policy otherwise.
func runPolicy(sc *scenarios.Scenario, name string, o *outputs, stderr io.Writer, several bool) (*sim.Result, time.Duration, error) {
	opts := sim.Options{Strategy: name}
	if policy.Reference(name) {
		opts = sim.Options{Policy: name}
	}
	closeSink, err := o.decisionSink(&opts, name, several)
	if err != nil {
		return nil, 0, err
	}
	bar := newProgress(stderr, sc.Name+" "+name, !o.noProgress && !o.quiet)
	opts.Progress = bar.update
	start := time.Now()
	res, err := runSim(sc, opts)
	elapsed := time.Since(start)
	bar.finish()
	if cerr := closeSink(); err == nil && cerr != nil {
		err = cerr
	}
	return res, elapsed, err
}

func writePolicies(r *report.PolicyReport, w wall, o *outputs, stdout io.Writer) error {
	if o.quiet {
		fmt.Fprintf(stdout, "%s: %d policies compared\n", r.Scenario, len(r.Rows))
	} else {
		fmt.Fprint(stdout, r.Text())
	}
	fmt.Fprintln(stdout, w.line())
	if err := writeFiles(o.json, r.WriteJSON, o.markdown, text(r.Markdown)); err != nil {
		return err
	}
	if o.plots == "" {
		return nil
	}
	if err := os.MkdirAll(o.plots, 0o755); err != nil {
		return err
	}
	figs, err := r.Figures()
	if err != nil {
		return err
	}
	for _, f := range figs {
		for _, format := range []string{report.FormatPNG, report.FormatSVG} {
			path := filepath.Join(o.plots, f.Name+"."+format)
			if err := cli.WriteFile(path, func(w io.Writer) error { return f.WriteTo(w, format) }); err != nil {
				return err
			}
		}
	}
	return nil
}
