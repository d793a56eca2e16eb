package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim/policy"
	"github.com/anvil-llm/anvil/sim/report"
)

func newRun() *cobra.Command {
	var o outputs
	cmd := &cobra.Command{
		Use:   "run FILE|NAME",
		Short: "Run one scenario (a YAML file or an embedded name) and print its report",
		Args:  cli.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScenario(cmd, args[0], nil, &o)
		},
	}
	o.flags(cmd.Flags())
	return cmd
}

// runScenario loads, checks and runs one scenario under strategies (nil: the scenario's own), writes
// the reports and fails with errGates when a gate fails.
func runScenario(cmd *cobra.Command, arg string, strategies []string, o *outputs) error {
	sc, err := loadScenario(arg, scenarios.Override{Duration: o.duration})
	if err != nil {
		return err
	}
	if strategies == nil {
		strategies = sc.Strategies
	}
	if err := checkScenario(arg, sc, strategies); err != nil {
		return err
	}
	r, w, err := simulate(sc, strategies, o, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if err := o.write(r, w, cmd.OutOrStdout()); err != nil {
		return err
	}
	if !r.Passed {
		return errGates
	}
	return nil
}

func newCompare() *cobra.Command {
	var o outputs
	var strategies string
	var benches []string
	var policies string
	cmd := &cobra.Command{
		Use:   "compare [FILE|NAME] (--strategies round_robin,capacity | --policies all | --bench RESULT.json ...)",
		Short: "Run one scenario under several strategies side by side, or beside anvil-bench's real-time results of it",
		Long: `With --strategies (the default), run one scenario under several strategies on the same arrivals
and seed, side by side.

With --bench, put anvil-bench's results of the scenario (anvil-bench run --scenario S --duration D
--label STRATEGY --json RESULT.json, against a real router in front of real fake-vLLM members) beside
a simulation of the same scenario, seed and arrival window under each result's strategy: TTFT and
end-to-end latency per strategy, with the difference and whether it is within issue 15's bounds
(p50 within 10%, p99 within 20%). The scenario is the results' (an embedded one) unless FILE|NAME is
given; it exits 1 when a figure is outside its bound.

With --policies, run one scenario under placement policies on the same arrivals and seed: the
capacity scheduler, round robin, and the simulator's reference policies (least_connections, random,
power_of_two, queue_kv, oracle), which only choose the member: the walk, admission and ceilings are
the capacity tier's for all of them. It prints goodput, TTFT/ITL/end-to-end p50 and p99, refusals
and queueing per policy, with ratios to capacity and to the clairvoyant greedy oracle; --plots draws
the latency CDFs. It exits 1 when a run broke a ceiling.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(benches) > 0 {
				return cli.MaximumNArgs(1)(cmd, args)
			}
			return cli.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("policies") {
				if cmd.Flags().Changed("strategies") || len(benches) > 0 {
					return cli.Usagef("--policies is exclusive with --strategies and --bench")
				}
				return comparePolicies(cmd, args[0], policies, &o)
			}
			if len(benches) > 0 {
				if cmd.Flags().Changed("strategies") {
					return cli.Usagef("--strategies and --bench are exclusive: the bench results name the strategies")
				}
				return compareBench(cmd, args, benches, &o)
			}
			list, err := parseStrategies(strategies)
			if err != nil {
				return err
			}
			return runScenario(cmd, args[0], list, &o)
		},
	}
	cmd.Flags().StringVar(&strategies, "strategies", "round_robin,capacity", "comma-separated strategies to compare (the first is the ratios' base)")
	cmd.Flags().StringVar(&policies, "policies", "", "compare placement policies instead: all, or a comma-separated list of "+strings.Join(policy.All(), ", ")+" (reference policies exist in the simulator only)")
	cmd.Flags().StringArrayVar(&benches, "bench", nil, "an anvil-bench run's JSON result of the scenario, labelled with the router's strategy (repeat for each strategy)")
	o.flags(cmd.Flags())
	return cmd
}

func parseStrategies(s string) ([]string, error) {
	var out []string
	for _, st := range strings.Split(s, ",") {
		st = strings.TrimSpace(st)
		if st != scenarios.StrategyRoundRobin && st != scenarios.StrategyCapacity {
			return nil, cli.Usagef("--strategies: %q is not round_robin or capacity", st)
		}
		if slices.Contains(out, st) {
			return nil, cli.Usagef("--strategies: %s listed twice", st)
		}
		out = append(out, st)
	}
	if len(out) < 2 {
		return nil, cli.Usagef("--strategies: compare needs two strategies")
	}
	return out, nil
}

func newCheck() *cobra.Command {
	var reportDir string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "check [DIR]",
		Short: "Run every scenario's gates (DIR's *.yaml, or the embedded scenarios); exit 1 on any failure",
		Args:  cli.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := checkList(args)
			if err != nil {
				return err
			}
			// Every scenario is loaded and checked before the first run starts: a bad file fails
			// the check at once, not after minutes of the good ones.
			loaded := make([]*scenarios.Scenario, len(list))
			for i, item := range list {
				if loaded[i], err = item.load(); err != nil {
					return err
				}
				if err := checkScenario(item.name, loaded[i], loaded[i].Strategies); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			failed := 0
			var total wall
			for i, item := range list {
				sc := loaded[i]
				o := outputs{noProgress: true}
				r, w, err := simulate(sc, sc.Strategies, &o, cmd.ErrOrStderr())
				if err != nil {
					return fmt.Errorf("%s: %w", item.name, err)
				}
				total.elapsed += w.elapsed
				total.virtual += w.virtual
				total.requests += w.requests
				total.events += w.events
				fmt.Fprintf(out, "%-4s %-22s %s  (%.2f s wall)\n", status(r), sc.Name, r.Verdict(), w.elapsed.Seconds())
				if !r.Passed {
					failed++
					if verbose {
						fmt.Fprint(out, r.Text())
					}
				}
				if reportDir != "" {
					if err := saveReport(r, reportDir); err != nil {
						return err
					}
				}
			}
			fmt.Fprintln(out, total.line())
			if failed > 0 {
				return fmt.Errorf("%d of %d scenarios failed their gates: %w", failed, len(list), errGates)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&reportDir, "report", "", "write each scenario's Markdown and JSON report into this directory")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print the full report of a failing scenario")
	return cmd
}

func status(r *report.Report) string {
	if r.Passed {
		return "ok"
	}
	return "FAIL"
}

// checkItem is one scenario to check: a file or an embedded name.
type checkItem struct {
	name string
	load func() (*scenarios.Scenario, error)
}

func checkList(args []string) ([]checkItem, error) {
	var out []checkItem
	if len(args) == 0 {
		for _, n := range scenarios.Names() {
			out = append(out, checkItem{name: n, load: func() (*scenarios.Scenario, error) { return loadScenario(n, scenarios.Override{}) }})
		}
		return out, nil
	}
	files, err := scenarioFiles(args[0])
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		out = append(out, checkItem{name: f, load: func() (*scenarios.Scenario, error) { return loadFile(f, scenarios.Override{}) }})
	}
	return out, nil
}

func saveReport(r *report.Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	o := outputs{json: filepath.Join(dir, r.Scenario+".json"), markdown: filepath.Join(dir, r.Scenario+".md")}
	return writeFiles(o.json, r.WriteJSON, o.markdown, text(r.Markdown))
}

func newList() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the embedded scenarios",
		Args:  cli.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, n := range scenarios.Names() {
				sc, err := scenarios.Lookup(n)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%-22s %8s  %s\n", n, sc.Duration.Round(time.Second), sc.Description)
			}
			return nil
		},
	}
}
