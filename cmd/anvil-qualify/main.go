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
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/internal/cli"
)

// Exit codes: 0 success (run: the verdict passed and the router was restored), 1 the run failed or
// was interrupted (the router restored), 2 usage, an invalid file or a refused approval (nothing
// was sent), 3 restoration failed: the router may be left changed. A run's own code travels in a
// cli.ExitError.
const (
	exitFailure    = cli.ExitFailure
	exitUsage      = cli.ExitUsage
	exitUnrestored = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}

// env looks up one environment variable.
type env func(string) (string, bool)

func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) int {
	return cli.Code(cli.Execute(ctx, newRoot(stdout, stderr, lookup), args, stderr))
}

func newRoot(stdout, stderr io.Writer, lookup env) *cobra.Command {
	root := cli.NewRoot("anvil-qualify",
		"Gated real-hardware qualification of a replica tier: an inert plan, an approved and recorded run, a promotion request for a human")
	root.Long = `anvil-qualify runs the qualification procedure of docs/benchmarks/methodology.md against a
router and its replica members. plan and digest send nothing; run starts only with --approve and
the approval token whose digest the file records for this exact plan; verify checks a run
directory against its manifest. Nothing here promotes anything.`
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newPlan(lookup), newDigest(lookup), newRun(lookup), newVerify())
	return root
}
