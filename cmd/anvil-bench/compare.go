package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/internal/cli"
)

// Target names of a comparison.
const (
	targetDirect = "direct"
	targetRouted = "routed"
)

func newCompare() *cobra.Command {
	var lf loadFlags
	var o outputs
	var direct, routed targetFlags
	var rounds int
	var routedFirst bool
	cmd := &cobra.Command{
		Use:   "compare --member URL... --direct-model M --url ROUTER --model ALIAS (--clients N | --rate R | --scenario S)",
		Short: "Send the same schedule and prompts to the members directly and through the router, side by side",
		Long: `compare runs one plan twice: against the members directly (client-side round robin over the
--member URLs, with the members' served model name) and through the router (the alias), one
after the other, with the same arrivals, shapes and seed. It reports both with their ratios and
the router's added latency (routed minus direct) per percentile. --rounds repeats the pair,
alternating which goes first when --routed-first is not given, and pools each target's rounds.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := lf.plan(cmd.Flags())
			if err != nil {
				return err
			}
			if err := o.check(); err != nil {
				return err
			}
			if rounds < 1 || rounds > bench.MaxRounds {
				return cli.Usagef("--rounds must be from 1 to %d", bench.MaxRounds)
			}
			dt, err := direct.target(targetDirect, "member", "direct-model")
			if err != nil {
				return err
			}
			rt, err := routed.target(targetRouted, "url", "model")
			if err != nil {
				return err
			}
			stopProfile, err := o.profile()
			if err != nil {
				return err
			}
			c := bench.NewClient(p.Concurrency(), p.MaxPromptTokens())
			defer c.Close()
			res, err := bench.RunPaired(cmd.Context(), c, &p, bench.Pair{Direct: dt, Routed: rt, Rounds: rounds, RoutedFirst: routedFirst},
				func(ctx context.Context, c *bench.Client, p bench.Plan, t bench.Target, round int) (*bench.RunResult, error) {
					return execute(ctx, c, p, t, round, cmd.ErrOrStderr(), o.noProgress)
				})
			if err != nil {
				_ = stopProfile()
				return err
			}
			if err := stopProfile(); err != nil {
				return err
			}
			if err := o.write(cmd.OutOrStdout(), bench.NewReport(res.Header, res.Records), func(w io.Writer) error {
				return bench.WriteRaw(w, res.Header, res.Records)
			}); err != nil {
				return err
			}
			return stopped(res.Runs)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&direct.urls, "member", nil, "base URL of one member, for the direct baseline (repeat for each member)")
	fl.StringVar(&direct.model, "direct-model", "", "the members' served model name")
	fl.StringVar(&direct.tokenFile, "direct-token-file", "", "read the members' bearer token from this file's first line")
	fl.StringVar(&direct.tokenEnv, "direct-token-env", "VLLM_API_KEY", "read the members' bearer token from this environment variable (when no --direct-token-file)")
	fl.StringArrayVar(&routed.urls, "url", nil, "base URL of the router")
	fl.StringVar(&routed.model, "model", "", "the router's alias for the members' tier")
	fl.StringVar(&routed.tokenFile, "token-file", "", "read the router's caller token from this file's first line")
	fl.StringVar(&routed.tokenEnv, "token-env", "ANVIL_API_TOKEN", "read the router's caller token from this environment variable (when no --token-file)")
	fl.IntVar(&rounds, "rounds", 1, "repeat the direct and routed runs this many times, alternating their order")
	fl.BoolVar(&routedFirst, "routed-first", false, "start with the routed run (default: direct first)")
	lf.register(fl, "compare")
	o.register(fl, true)
	return cmd
}
