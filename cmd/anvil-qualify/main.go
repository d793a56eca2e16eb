// Command anvil-qualify is the gated real-hardware qualification of a replica tier: an inert plan,
// an approved run that records every phase and restores the router, and a manifest a signer can
// verify. It never promotes anything.
//
//	anvil-qualify plan -f QUAL.yaml              # validate and print the procedure; sends nothing
//	anvil-qualify digest -f QUAL.yaml            # the approval digest line for the file; sends nothing
//	anvil-qualify run -f QUAL.yaml --approve     # with ANVIL_QUALIFY_APPROVAL or --approval-token
//	anvil-qualify verify RUN_DIR                 # check a run directory against its manifest
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes: 0 success (run: the verdict passed and the router was restored), 1 the run failed or
// was interrupted (the router restored), 2 usage, an invalid file or a refused approval (nothing
// was sent), 3 restoration failed: the router may be left changed.
const (
	exitFailure    = 1
	exitUsage      = 2
	exitUnrestored = 3
)

// usageError marks failures caused by the caller's input; exitError carries a run's exit code.
type (
	usageError struct{ err error }
	exitError  struct {
		code int
		err  error
	}
)

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
func (e exitError) Error() string  { return e.err.Error() }
func (e exitError) Unwrap() error  { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}

// env looks up one environment variable.
type env func(string) (string, bool)

func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) int {
	root := newRoot(stdout, stderr, lookup)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "anvil-qualify:", err)
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ee):
		return ee.code
	}
	return exitFailure
}

func newRoot(stdout, stderr io.Writer, lookup env) *cobra.Command {
	root := &cobra.Command{
		Use:   "anvil-qualify",
		Short: "Gated real-hardware qualification of a replica tier: an inert plan, an approved and recorded run, a promotion request for a human",
		Long: `anvil-qualify runs the qualification procedure of docs/benchmarks/methodology.md against a
router and its replica members. plan and digest send nothing; run starts only with --approve and
the approval token whose digest the file records for this exact plan; verify checks a run
directory against its manifest. Nothing here promotes anything.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newPlan(lookup), newDigest(lookup), newRun(lookup), newVerify())
	return root
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %d", cmd.Name(), len(args))
	}
	return nil
}
