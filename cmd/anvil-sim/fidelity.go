package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim/fidelity"
)

// errOutside is returned when a simulated figure and its real counterpart differ beyond the bound;
// the table already said which.
var errOutside = errors.New("figures outside their bounds (see the table)")

// compareBench is compare --bench: the bench results beside simulations of the same scenario, seed
// and arrival window. It exits 1 (errOutside) when a bounded figure is outside its bound.
func compareBench(cmd *cobra.Command, args, files []string, o *outputs) error {
	if o.plots != "" || o.decisions != "" {
		return cli.Usagef("--plots and --decisions apply to simulated runs, not to compare --bench")
	}
	results, err := readResults(files)
	if err != nil {
		return err
	}
	arg := results[0].Scenario
	if len(args) == 1 {
		arg = args[0]
	}
	if arg == "" {
		return cli.Usagef("%s is a run of no scenario; anvil-bench run --scenario makes results to compare", files[0])
	}
	window := o.duration
	if window == 0 {
		window = fidelity.Window(results[0])
	}
	sc, err := loadScenario(arg, scenarios.Override{Duration: window})
	if err != nil {
		return err
	}
	if o.seed != 0 {
		sc.Seed = o.seed
	}
	if err := fidelity.Match(sc, results); err != nil {
		return cli.UsageError{Err: err}
	}
	strategies := fidelity.Strategies(results)
	if err := checkScenario(arg, sc, strategies); err != nil {
		return err
	}
	sims, w, err := runAll(sc, strategies, o, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	r := fidelity.Build(sc, sims, results)
	if err := writeFidelity(&r, w, o, cmd.OutOrStdout()); err != nil {
		return err
	}
	if !r.Passed {
		return errOutside
	}
	return nil
}

// readResults reads each bench result file strictly.
func readResults(files []string) ([]bench.Result, error) {
	var out []bench.Result
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return nil, cli.UsageError{Err: err}
		}
		r, err := bench.ReadResult(f)
		_ = f.Close()
		if err != nil {
			return nil, cli.Usagef("%s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func writeFidelity(r *fidelity.Report, w wall, o *outputs, stdout io.Writer) error {
	if o.quiet {
		fmt.Fprintf(stdout, "%s: %d of %d bounded figures within their bounds\n", r.Scenario, r.Within, r.Bounded)
	} else if err := r.Text(stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout, w.line())
	return writeFiles(o.json, r.WriteJSON, o.markdown, r.Markdown)
}

// newReplay replays a bench run against one real member through the engine model.
func newReplay() *cobra.Command {
	var o outputs
	var profileName string
	var scale float64
	cmd := &cobra.Command{
		Use:   "replay RAW.jsonl --profile NAME [--step-scale X]",
		Short: "Replay an anvil-bench run against one fake-vLLM member through the engine model, request by request",
		Long: `Replay the raw records of anvil-bench run --raw against one anvil-fakevllm member (one URL, no
router) through a fresh engine of the member's profile and step scale, each successful request
submitted at the time the bench sent it with the token counts the member reported. The engine is
the one the member runs, so the difference of each request is what the real path adds (HTTP both
ways, goroutine scheduling, timer lateness) at the machine's load: the part of a sim-versus-real
gap that is not the model's. It exits 1 when a figure is outside issue 15's bounds.`,
		Args: cli.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := fidelity.Profile(profileName)
			if err != nil {
				return cli.Usagef("--profile: %w", err)
			}
			if !(scale > 0 && scale <= scenarios.MaxStepScale) {
				return cli.Usagef("--step-scale must be in (0, %g]", scenarios.MaxStepScale)
			}
			f, err := os.Open(args[0])
			if err != nil {
				return cli.UsageError{Err: err}
			}
			h, recs, err := bench.ReadRaw(f)
			_ = f.Close()
			if err != nil {
				return cli.Usagef("%s: %w", args[0], err)
			}
			r, err := fidelity.Replay(h, recs, p, scale)
			if err != nil {
				return cli.Usagef("%s: %w", args[0], err)
			}
			if err := r.Text(cmd.OutOrStdout()); err != nil {
				return err
			}
			if err := writeFiles(o.json, r.WriteJSON, o.markdown, r.Markdown); err != nil {
				return err
			}
			if !r.Passed {
				return errOutside
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&profileName, "profile", "8b-h100", "the member's engine profile, as anvil-fakevllm serve --profile names it")
	fl.Float64Var(&scale, "step-scale", 1, "the member's step-time multiplier (its --fault-step-multiplier)")
	fl.StringVar(&o.json, "json", "", "write the replay as JSON to this file")
	fl.StringVar(&o.markdown, "markdown", "", "write the replay as Markdown to this file")
	return cmd
}
