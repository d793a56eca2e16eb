package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect router configuration"}
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Validate a config file and print it normalized, secrets redacted",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(args[0])
			if err != nil {
				return usageError{err}
			}
			out, err := cfg.Normalized()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	})
	return cmd
}

func newDecisionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "decisions", Short: "Work with captured decision logs"}
	var asJSON bool
	sum := &cobra.Command{
		Use:   "summarize FILE",
		Short: "Strictly read a captured JSONL decision log and summarize it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return usageError{fmt.Errorf("cannot open decision log: %w", err)}
			}
			defer f.Close()
			recs, err := decisionlog.ReadJSONL(f, decisionlog.MaxReadRecords)
			if err != nil {
				return usageError{err}
			}
			s := decisionlog.Summarize(recs)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), s)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), s.Text())
			return err
		},
	}
	sum.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	cmd.AddCommand(sum)
	return cmd
}
