package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/qualification"
)

// readPlan reads and validates a qualification file (a regular file, at most
// qualification.MaxFileBytes).
func readPlan(path string) (*qualification.Plan, error) {
	if path == "" {
		return nil, cli.Usagef("-f QUAL.yaml is required")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, cli.Usagef("cannot read the qualification file %s", path)
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, cli.Usagef("the qualification file %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, qualification.MaxFileBytes+1))
	if err != nil {
		return nil, cli.Usagef("cannot read the qualification file %s", path)
	}
	p, err := qualification.Parse(data)
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	return p, nil
}

// sources are the process's token sources with the command's environment lookup.
func sources(lookup env) qualification.Sources {
	s := qualification.OSSources()
	s.LookupEnv = lookup
	return s
}

// approvalToken is --approval-token, else ANVIL_QUALIFY_APPROVAL.
func approvalToken(flag string, lookup env) string {
	if flag != "" {
		return flag
	}
	v, _ := lookup(qualification.ApprovalEnv)
	return v
}

func newPlan(lookup env) *cobra.Command {
	var file string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan -f QUAL.yaml",
		Short: "Validate a qualification file and print the exact procedure and what each phase touches; sends nothing",
		Args:  cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := readPlan(file)
			if err != nil {
				return err
			}
			if asJSON {
				_, err := cmd.OutOrStdout().Write(append(p.JSON(), '\n'))
				return err
			}
			return p.Describe(cmd.OutOrStdout(), p.Availability(sources(lookup)))
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the qualification file (QUAL.yaml)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the resolved plan as JSON (what the fingerprint covers)")
	return cmd
}

func newDigest(lookup env) *cobra.Command {
	var file, token string
	cmd := &cobra.Command{
		Use:   "digest -f QUAL.yaml",
		Short: "Print the approval digest of this plan under the approval token, to record in the file; sends nothing",
		Long: `digest computes approval.digest for the plan in the file: HMAC-SHA256 of the plan's fingerprint
under the approval token (from ANVIL_QUALIFY_APPROVAL, or --approval-token). Record the printed
lines in the file; changing anything a run would do changes the fingerprint and voids them.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := readPlan(file)
			if err != nil {
				return err
			}
			t := approvalToken(token, lookup)
			if t == "" {
				return cli.UsageError{Err: qualification.ErrNoToken}
			}
			d, err := qualification.Digest(t, p.Fingerprint())
			if err != nil {
				return cli.UsageError{Err: err}
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "# plan %s\napproval:\n  digest: %s\n", p.Fingerprint(), d)
			return err
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the qualification file (QUAL.yaml)")
	cmd.Flags().StringVar(&token, "approval-token", "", "the approval token (default: $"+qualification.ApprovalEnv+")")
	return cmd
}

func newRun(lookup env) *cobra.Command {
	var file, token string
	var approve bool
	cmd := &cobra.Command{
		Use:   "run -f QUAL.yaml --approve",
		Short: "Run an approved qualification: every phase recorded, the router restored, a verdict and a promotion request",
		Long: `run refuses to start, sending nothing, without --approve and an approval token (--approval-token
or ANVIL_QUALIFY_APPROVAL) whose digest over this plan's fingerprint is the one the file records.
Then it runs preflight, baseline, routed, sustained and failure (and calibration, the ceiling sweep
against one member, when the file plans phases.calibration), then restoration and the gate,
which always run (Ctrl-C stops the load and goes straight to restoration). Exit 0: the verdict
passed and the router was restored; 1: the run failed or was interrupted; 3: restoration failed.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := readPlan(file)
			if err != nil {
				return err
			}
			approval, err := p.Approve(approve, approvalToken(token, lookup))
			if err != nil {
				return cli.UsageError{Err: err}
			}
			secrets, err := p.Resolve(sources(lookup))
			if err != nil {
				return cli.UsageError{Err: err}
			}
			res, err := qualification.Run(cmd.Context(), p, approval, qualification.Options{Secrets: secrets, Progress: cmd.ErrOrStderr()})
			if res == nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run directory: %s\nevidence: %s\nverdict: %s (promotable: %t)\nrouter restored: %t\n",
				res.Dir, res.Verdict.Evidence, res.Verdict.Result, res.Verdict.Promotable, res.Verdict.Restored)
			for _, r := range res.Verdict.Reasons {
				fmt.Fprintf(cmd.OutOrStdout(), "  - %s\n", r)
			}
			switch {
			case err != nil:
				return cli.ExitError{Code: cli.ExitFailure, Err: err}
			case !res.Verdict.Restored:
				return cli.ExitError{Code: exitUnrestored, Err: errors.New("restoration failed: the router may be left changed; see router/status-after.json")}
			case res.Verdict.Result != qualification.VerdictPass:
				return cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("verdict %s", res.Verdict.Result)}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the qualification file (QUAL.yaml)")
	cmd.Flags().BoolVar(&approve, "approve", false, "required: the operator approves this run")
	cmd.Flags().StringVar(&token, "approval-token", "", "the approval token (default: $"+qualification.ApprovalEnv+")")
	return cmd
}

func newVerify() *cobra.Command {
	return &cobra.Command{
		Use:   "verify RUN_DIR",
		Short: "Check a run directory against its manifest: exactly the listed files, each with its SHA-256",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cli.Usagef("verify takes one run directory, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := qualification.Verify(args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: %d files match the manifest; evidence %s, verdict %s, plan %s\n",
				args[0], len(m.Files), m.Evidence, m.Verdict, m.Fingerprint)
			return err
		},
	}
}
