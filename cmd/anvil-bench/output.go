package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/spf13/pflag"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/internal/cli"
)

// outputs are the files a run writes besides the terminal table.
type outputs struct {
	json, markdown, raw, plots, plotFormat string
	cpuProfile                             string
	noProgress                             bool
}

func (o *outputs) register(fl *pflag.FlagSet, withRaw bool) {
	fl.StringVar(&o.json, "json", "", "write the JSON result to this file")
	fl.StringVar(&o.markdown, "markdown", "", "write the Markdown report to this file")
	if withRaw {
		fl.StringVar(&o.raw, "raw", "", "write every request's raw record (per-chunk timestamps) as JSONL to this file")
		fl.BoolVar(&o.noProgress, "no-progress", false, "never show the progress bar")
		fl.StringVar(&o.cpuProfile, "cpuprofile", "", "write the bench's own CPU profile to this file (to check it is not the bottleneck)")
	}
	fl.StringVar(&o.plots, "plots", "", "write latency CDF plots into this directory")
	fl.StringVar(&o.plotFormat, "plot-format", bench.FormatPNG, "plot format: png or svg")
}

// check refuses bad output flags before anything is sent.
func (o *outputs) check() error {
	if o.plotFormat != bench.FormatPNG && o.plotFormat != bench.FormatSVG {
		return cli.Usagef("--plot-format must be png or svg")
	}
	for _, f := range []string{o.json, o.markdown, o.raw, o.cpuProfile} {
		if f == "" {
			continue
		}
		if info, err := os.Stat(filepath.Dir(f)); err != nil || !info.IsDir() {
			return cli.Usagef("the directory of %s does not exist", f)
		}
	}
	return nil
}

// profile starts the CPU profile when asked for; the returned function stops it.
func (o *outputs) profile() (func() error, error) {
	if o.cpuProfile == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(o.cpuProfile)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// write prints the table and writes the requested files. raw is nil for the report command.
func (o *outputs) write(stdout io.Writer, r *bench.Report, raw func(io.Writer) error) error {
	if err := r.Text(stdout); err != nil {
		return err
	}
	if o.json != "" {
		if err := cli.WriteFile(o.json, r.JSON); err != nil {
			return err
		}
	}
	if o.markdown != "" {
		if err := cli.WriteFile(o.markdown, r.Markdown); err != nil {
			return err
		}
	}
	if o.raw != "" && raw != nil {
		if err := cli.WriteFile(o.raw, raw); err != nil {
			return err
		}
	}
	if o.plots != "" {
		if err := o.writePlots(r); err != nil {
			return err
		}
	}
	return nil
}

func (o *outputs) writePlots(r *bench.Report) error {
	if err := os.MkdirAll(o.plots, 0o755); err != nil {
		return err
	}
	figs, err := r.Figures()
	if err != nil {
		return err
	}
	for _, f := range figs {
		path := filepath.Join(o.plots, f.Name+"."+o.plotFormat)
		if err := cli.WriteFile(path, func(w io.Writer) error { return f.WriteTo(w, o.plotFormat) }); err != nil {
			return err
		}
	}
	return nil
}

// stopped turns an early stop into the command's error.
func stopped(results []*bench.RunResult) error {
	for _, r := range results {
		if r.Stopped != "" {
			return fmt.Errorf("%s: %s: %w", r.Target.Name, r.Stopped, errStopped)
		}
	}
	return nil
}
