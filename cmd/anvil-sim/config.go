package main

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// newConfig prints the router configuration the simulator runs a scenario with, placed on real
// endpoints: how a real router runs the same tier (bench/sim-vs-real.sh uses it).
func newConfig() *cobra.Command {
	var strategy, listen, intentFile string
	var endpoints []string
	cmd := &cobra.Command{
		Use:   "config FILE|NAME [--strategy S] [--endpoint URL ...] [--listen ADDR]",
		Short: "Print the anvil-router configuration the simulator runs the scenario's tier with",
		Long: `Print, as anvil-router YAML, the configuration the simulator runs the scenario's tier with
under a strategy (default: the tier's own), validated by the real config model. --endpoint, once
per member in the scenario's order, puts the members on real URLs (all on one host); --listen sets
the router's address. The caller token is not in the file: the router reads it from
ANVIL_API_TOKEN, as the simulator's virtual router does.`,
		Args: cli.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := loadScenario(args[0], scenarios.Override{})
			if err != nil {
				return err
			}
			if strategy == "" {
				strategy = sc.Tier.Strategy
			}
			if strategy != scenarios.StrategyRoundRobin && strategy != scenarios.StrategyCapacity {
				return cli.Usagef("--strategy: %q is not round_robin or capacity", strategy)
			}
			doc, err := sim.RouterDocument(sc, strategy, sim.Placement{Endpoints: endpoints, Listen: listen, IntentFile: intentFile})
			if err != nil {
				return cli.Usagef("%s: %w", args[0], err)
			}
			var buf bytes.Buffer
			fmt.Fprintf(&buf, "# anvil-router configuration of scenario %s under %s, as anvil-sim runs it (anvil-sim config).\n", sc.Name, strategy)
			buf.WriteString("# The caller token comes from ANVIL_API_TOKEN.\n")
			if n := len(sc.Reloads); n > 0 {
				fmt.Fprintf(&buf, "# This is the configuration before the scenario's %d reloads (see its reloads:).\n", n)
			}
			enc := yaml.NewEncoder(&buf)
			enc.SetIndent(2)
			if err := enc.Encode(doc); err != nil {
				return err
			}
			if err := enc.Close(); err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(buf.Bytes())
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&strategy, "strategy", "", "round_robin or capacity (default: the tier's strategy)")
	fl.StringArrayVar(&endpoints, "endpoint", nil, "a member's base URL, once per member in the scenario's order (default: the simulator's virtual ones)")
	fl.StringVar(&listen, "listen", "", "the router's listen address, e.g. 127.0.0.1:0 (default: the router's)")
	fl.StringVar(&intentFile, "intent-file", "", "the router's intent_file (for scenarios that restart it)")
	return cmd
}

// newMembers lists what each member of a scenario is, so a real fake-vLLM can stand in for it.
func newMembers() *cobra.Command {
	return &cobra.Command{
		Use:   "members FILE|NAME",
		Short: "List each member's served model, engine profile and step scale (tab-separated), for anvil-fakevllm serve",
		Long: `List the scenario's members, one line each, tab-separated: ID, served model, engine profile,
step scale, and the serving engine when the scenario's tier sets one. A real stand-in is
anvil-fakevllm serve --model MODEL --profile PROFILE --fault-step-multiplier SCALE [--engine ENGINE]:
the same engine model on real time. The first line is a comment naming the columns.`,
		Args: cli.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := loadScenario(args[0], scenarios.Override{})
			if err != nil {
				return err
			}
			// The router config refuses what could not stand in a line of this list (a served
			// model name is visible ASCII).
			if err := checkScenario(args[0], sc, sc.Strategies); err != nil {
				return err
			}
			var buf bytes.Buffer
			// A fifth column only when the tier names its engine: vLLM scenarios list as before.
			header, engine := "# id\tserved_model\tprofile\tstep_scale", ""
			if sc.Tier.Engine != "" {
				header, engine = header+"\tengine", "\t"+sc.Tier.Engine
			}
			buf.WriteString(header + "\n")
			for _, m := range sc.Tier.Members {
				fmt.Fprintf(&buf, "%s\t%s\t%s\t%s%s\n", m.ID, sc.Tier.ServedModel, m.Profile, strconv.FormatFloat(m.StepScale, 'g', -1, 64), engine)
			}
			_, err = cmd.OutOrStdout().Write(buf.Bytes())
			return err
		},
	}
}
