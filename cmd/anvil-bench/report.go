package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/internal/cli"
)

func newReport() *cobra.Command {
	var o outputs
	var goodput []string
	cmd := &cobra.Command{
		Use:   "report RAW.jsonl",
		Short: "Recompute a run's or a comparison's report from its raw records",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cli.Usagef("report takes one raw file, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(); err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return cli.UsageError{Err: err}
			}
			defer f.Close()
			h, recs, err := bench.ReadRaw(f)
			if err != nil {
				return cli.UsageError{Err: err}
			}
			if cmd.Flags().Changed("goodput") {
				slo, err := parseGoodput(goodput)
				if err != nil {
					return err
				}
				h.SLO = slo.Millis()
			}
			return o.write(cmd.OutOrStdout(), bench.NewReport(h, recs), nil)
		},
	}
	cmd.Flags().StringSliceVar(&goodput, "goodput", nil, "recompute goodput under these SLOs in ms: ttft:MS,tpot:MS,e2el:MS")
	o.register(cmd.Flags(), false)
	return cmd
}
