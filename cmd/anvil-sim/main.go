// Command anvil-sim runs Anvil's deterministic simulator: the real router code (config, routing,
// admission, scheduler, pressure core, decision log) against virtual fake-vLLM engines on virtual
// time.
//
//	anvil-sim run twenty-concurrent                 run one scenario (an embedded name or a file)
//	anvil-sim check scenarios/                      run every scenario's gates; exit 1 on a failure
//	anvil-sim compare heterogeneous --strategies round_robin,capacity
//	anvil-sim compare unequal-speed --policies all  capacity vs reference policies and the greedy oracle
//	anvil-sim compare --bench rr.json --bench capacity.json   simulated vs anvil-bench's real-time runs
//	anvil-sim config heterogeneous --strategy capacity --endpoint URL --endpoint URL --listen 127.0.0.1:0
//	anvil-sim members heterogeneous                 each member's model, profile and step scale
//	anvil-sim replay alone.jsonl --profile 8b-h100  a bench run against one member vs the engine model
//	anvil-sim list                                  the embedded scenarios
package main

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/internal/cli"
)

// Exit codes: 0 success, 1 a gate failed or the run failed, 2 usage or invalid input.
const (
	exitFailure = cli.ExitFailure
	exitUsage   = cli.ExitUsage
)

// errGates is returned when a report's gates failed; the report itself already said which.
var errGates = errors.New("gates failed")

func main() {
	if os.Getenv("GOGC") == "" {
		// The simulator is a batch job that allocates briskly: a lazier collector trades memory
		// (a few hundred MB for sixteen-members-hour) for about a tenth of the wall time.
		debug.SetGCPercent(400)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return cli.Code(cli.Execute(context.Background(), newRoot(stdout, stderr), args, stderr))
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := cli.NewRoot("anvil-sim", "Deterministic simulation of Anvil's scheduler on virtual time")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRun(), newCheck(), newCompare(), newConfig(), newMembers(), newReplay(), newList())
	root.AddCommand(newCalibrate())
	return root
}
