package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/internal/cli"
)

// targetFlags name one target on the command line.
type targetFlags struct {
	urls      []string
	model     string
	tokenFile string
	tokenEnv  string
}

func (f *targetFlags) target(name, urlFlag, modelFlag string) (bench.Target, error) {
	if len(f.urls) == 0 {
		return bench.Target{}, cli.Usagef("--%s is required", urlFlag)
	}
	if f.model == "" {
		return bench.Target{}, cli.Usagef("--%s is required", modelFlag)
	}
	tok, err := token(f.tokenFile, f.tokenEnv)
	if err != nil {
		return bench.Target{}, err
	}
	t := bench.Target{Name: name, URLs: f.urls, Model: f.model, Token: tok}
	if err := t.Validate(); err != nil {
		return bench.Target{}, cli.UsageError{Err: err}
	}
	return t, nil
}

func newRun() *cobra.Command {
	var lf loadFlags
	var o outputs
	var tf targetFlags
	cmd := &cobra.Command{
		Use:   "run --url URL --model M (--clients N | --rate R | --scenario S) [--requests N | --duration D]",
		Short: "Send a load to one OpenAI-compatible URL and report vllm bench serve's figures",
		Args:  cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := lf.plan(cmd.Flags())
			if err != nil {
				return err
			}
			if err := o.check(); err != nil {
				return err
			}
			t, err := tf.target("target", "url", "model")
			if err != nil {
				return err
			}
			stopProfile, err := o.profile()
			if err != nil {
				return err
			}
			c := bench.NewClient(p.Concurrency(), p.MaxPromptTokens())
			defer c.Close()
			res, err := execute(cmd.Context(), c, p, t, 0, cmd.ErrOrStderr(), o.noProgress)
			if perr := stopProfile(); err == nil {
				err = perr
			}
			if err != nil {
				return err
			}
			h := bench.Header(&p, []bench.TargetInfo{res.Info()})
			if err := o.write(cmd.OutOrStdout(), bench.NewReport(h, res.Records), func(w io.Writer) error {
				return bench.WriteRaw(w, h, res.Records)
			}); err != nil {
				return err
			}
			return stopped([]*bench.RunResult{res})
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&tf.urls, "url", nil, "base URL of the target (repeat for client-side round robin over several)")
	fl.StringVar(&tf.model, "model", "", "model name the requests carry")
	fl.StringVar(&tf.tokenFile, "token-file", "", "read the bearer token from this file's first line")
	fl.StringVar(&tf.tokenEnv, "token-env", "ANVIL_API_TOKEN", "read the bearer token from this environment variable (when no --token-file)")
	lf.register(fl, "run")
	o.register(fl, true)
	return cmd
}

// execute runs one target with a progress bar on a terminal.
func execute(ctx context.Context, c *bench.Client, p bench.Plan, t bench.Target, round int, stderr io.Writer, noProgress bool) (*bench.RunResult, error) {
	live := &bench.Live{OnAllUnauthorized: func(n int) {
		fmt.Fprintf(stderr, "anvil-bench: warning: the first %d answers from %s were all 401 Unauthorized: "+
			"the token is missing or wrong (%s), and every http_4xx of this run is likely one\n", n, t.Name, tokenFlags(t.Name))
	}}
	var bar *bench.Progress
	if !noProgress && cli.IsTerminal(stderr) {
		total := int64(0)
		if p.Requests > 0 {
			total = int64(p.Requests + p.Warmup)
		}
		bar = bench.StartProgress(stderr, p.Label+" "+t.Name, live, total, p.Duration)
	}
	res, err := bench.Run(ctx, c, p, t, round, live)
	if bar != nil {
		bar.Stop()
	}
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	return res, nil
}

// tokenFlags names where a target's token comes from, for the 401 warning.
func tokenFlags(target string) string {
	if target == targetDirect {
		return "--direct-token-file, or the variable --direct-token-env names, default VLLM_API_KEY"
	}
	return "--token-file, or the variable --token-env names, default ANVIL_API_TOKEN"
}
