package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	cmdline "github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

func newDecisionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "decisions", Short: "Work with captured decision logs"}
	var asJSON, skipInvalid bool
	sum := &cobra.Command{
		Use:   "summarize FILE",
		Short: "Strictly read a captured JSONL decision log and summarize it",
		Long: "Strictly read a captured JSONL decision log and summarize it. By default the first invalid\n" +
			"line refuses the whole file (with its line number); --skip-invalid skips and counts invalid\n" +
			"lines instead, for captures cut short by a crash or a full disk.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return cmdline.Usagef("cannot open decision log: %w", err)
			}
			defer f.Close()
			var recs []decisionlog.Record
			var skipped int
			if skipInvalid {
				var first error
				recs, skipped, first = decisionlog.ReadJSONLTolerant(f, decisionlog.MaxReadRecords)
				if skipped > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "skipped %d invalid lines; first: %v\n", skipped, first)
				}
			} else if recs, err = decisionlog.ReadJSONL(f, decisionlog.MaxReadRecords); err != nil {
				return cmdline.UsageError{Err: err}
			}
			s := decisionlog.Summarize(recs)
			s.Skipped += skipped // the lines the read skipped are skipped records too, in text and JSON
			if asJSON {
				return cmdline.WriteJSON(cmd.OutOrStdout(), s)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), s.Text())
			return err
		},
	}
	sum.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	sum.Flags().BoolVar(&skipInvalid, "skip-invalid", false, "skip and count invalid lines instead of refusing the file")
	cmd.AddCommand(sum)
	return cmd
}
