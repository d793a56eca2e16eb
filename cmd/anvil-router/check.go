package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/ident"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect router configuration"}
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Validate a config file and print it normalized, secrets redacted",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := load.File(args[0])
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
				return usageError{fmt.Errorf("cannot open decision log: %w", err)}
			}
			defer f.Close()
			var recs []decisionlog.Record
			if skipInvalid {
				var skipped int
				var first error
				recs, skipped, first = readTolerant(f)
				if skipped > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "skipped %d invalid lines; first: %v\n", skipped, first)
				}
			} else if recs, err = decisionlog.ReadJSONL(f, decisionlog.MaxReadRecords); err != nil {
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
	sum.Flags().BoolVar(&skipInvalid, "skip-invalid", false, "skip and count invalid lines instead of refusing the file")
	cmd.AddCommand(sum)
	return cmd
}

// readTolerant reads a capture line by line through the same strict reader, keeping every valid
// record and counting the rest. Over-long lines are skipped without being buffered whole.
func readTolerant(r io.Reader) ([]decisionlog.Record, int, error) {
	br := bufio.NewReaderSize(r, ident.MaxLineBytes+2)
	var recs []decisionlog.Record
	var skipped int
	var first error
	fail := func(n int, err error) {
		skipped++
		if first == nil {
			if _, ok := err.(*decisionlog.LineError); !ok {
				err = fmt.Errorf("line %d: %w", n, err)
			}
			first = err
		}
	}
	for n := 1; len(recs) < decisionlog.MaxReadRecords; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			fail(n, errors.New("line too long"))
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				break
			}
			continue
		}
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				fail(n, errors.New("last line has no newline (cut short)"))
			} else if rec, rerr := decisionlog.ReadJSONL(bytes.NewReader(line), 1); rerr != nil {
				var le *decisionlog.LineError
				if errors.As(rerr, &le) {
					le.Line = n // the strict reader saw this line alone; report its place in the file
					rerr = le
				}
				fail(n, rerr)
			} else {
				recs = append(recs, rec...)
			}
		}
		if err != nil {
			break
		}
	}
	return recs, skipped, first
}
