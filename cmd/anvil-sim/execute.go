package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
	"github.com/anvil-llm/anvil/sim/report"
)

// outputs are the optional files a run writes besides the terminal report.
type outputs struct {
	json, markdown, plots, decisions string
	seed                             uint64
	duration                         time.Duration
	quiet, noProgress                bool
}

func (o *outputs) flags(cmdFlags interface {
	StringVar(*string, string, string, string)
	Uint64Var(*uint64, string, uint64, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	BoolVar(*bool, string, bool, string)
}) {
	cmdFlags.StringVar(&o.json, "json", "", "write the JSON report to this file")
	cmdFlags.StringVar(&o.markdown, "markdown", "", "write the Markdown report to this file")
	cmdFlags.StringVar(&o.plots, "plots", "", "write PNG and SVG plots into this directory")
	cmdFlags.StringVar(&o.decisions, "decisions", "", "write every decision record as JSONL to this file (one file per strategy: FILE.<strategy>.jsonl when there are several)")
	cmdFlags.Uint64Var(&o.seed, "seed", 0, "override the scenario's seed (0 keeps it)")
	cmdFlags.DurationVar(&o.duration, "duration", 0, "override the scenario's duration, as if its file said so (0 keeps it)")
	cmdFlags.BoolVar(&o.quiet, "quiet", false, "print only the verdict and the wall-clock line")
	cmdFlags.BoolVar(&o.noProgress, "no-progress", false, "never show a progress bar")
}

// wall is the wall-clock accounting of the runs of one report: the only clock reading of the
// simulator, kept out of every report so reports stay deterministic.
type wall struct {
	elapsed  time.Duration
	virtual  time.Duration
	requests int
	events   uint64
}

func (w wall) line() string {
	secs := w.elapsed.Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	return fmt.Sprintf("wall clock: %.2f s for %.0f s of virtual time (%.0fx real time); %d requests (%.0f per wall second); %d events",
		secs, w.virtual.Seconds(), w.virtual.Seconds()/secs, w.requests, float64(w.requests)/secs, w.events)
}

// simulate runs sc once per strategy and builds the report.
func simulate(sc *scenarios.Scenario, strategies []string, o *outputs, stderr io.Writer) (*report.Report, wall, error) {
	results, w, err := runAll(sc, strategies, o, stderr)
	if err != nil {
		return nil, w, err
	}
	return report.Build(sc, results), w, nil
}

// runAll runs sc once per strategy, under the seed override, with a progress bar on a terminal.
func runAll(sc *scenarios.Scenario, strategies []string, o *outputs, stderr io.Writer) ([]*sim.Result, wall, error) {
	if o.seed != 0 {
		sc.Seed = o.seed
	}
	var results []*sim.Result
	var w wall
	for _, st := range strategies {
		opts := sim.Options{Strategy: st}
		closeSink, err := o.decisionSink(&opts, st, len(strategies) > 1)
		if err != nil {
			return nil, w, err
		}
		bar := newProgress(stderr, sc.Name+" "+st, !o.noProgress && !o.quiet)
		opts.Progress = bar.update
		start := time.Now()
		res, err := sim.Run(sc, opts)
		w.elapsed += time.Since(start)
		bar.finish()
		if cerr := closeSink(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return nil, w, err
		}
		w.virtual += res.Duration
		w.requests += len(res.Requests)
		w.events += res.Events
		results = append(results, res)
	}
	return results, w, nil
}

// decisionSink opens the JSONL decision file for one strategy's run.
func (o *outputs) decisionSink(opts *sim.Options, strategy string, several bool) (func() error, error) {
	if o.decisions == "" {
		return func() error { return nil }, nil
	}
	path := o.decisions
	if several {
		path = strings.TrimSuffix(path, ".jsonl") + "." + strategy + ".jsonl"
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	opts.Decisions = bw
	return func() error {
		if err := bw.Flush(); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}, nil
}

// writeFiles writes a report's JSON and Markdown renderings to the paths asked for; an empty path
// skips its rendering.
func writeFiles(jsonPath string, writeJSON func(io.Writer) error, mdPath string, writeMD func(io.Writer) error) error {
	if jsonPath != "" {
		if err := cli.WriteFile(jsonPath, writeJSON); err != nil {
			return err
		}
	}
	if mdPath != "" {
		return cli.WriteFile(mdPath, writeMD)
	}
	return nil
}

// text turns a string rendering into a writer function, rendered only when it is written.
func text(render func() string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, render()); return err }
}

// write puts the report on stdout and into the requested files.
func (o *outputs) write(r *report.Report, w wall, stdout io.Writer) error {
	if o.quiet {
		fmt.Fprintf(stdout, "%s: %s\n", r.Scenario, r.Verdict())
	} else {
		fmt.Fprint(stdout, r.Text())
	}
	fmt.Fprintln(stdout, w.line())
	if err := writeFiles(o.json, r.WriteJSON, o.markdown, text(r.Markdown)); err != nil {
		return err
	}
	if o.plots != "" {
		return writePlots(r, o.plots)
	}
	return nil
}

func writePlots(r *report.Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	figs, err := r.Figures()
	if err != nil {
		return err
	}
	for _, f := range figs {
		for _, format := range []string{report.FormatPNG, report.FormatSVG} {
			path := filepath.Join(dir, f.Name+"."+format)
			if err := cli.WriteFile(path, func(w io.Writer) error { return f.WriteTo(w, format) }); err != nil {
				return err
			}
		}
	}
	return nil
}
