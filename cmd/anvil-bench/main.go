// Command anvil-bench is a black-box load generator for OpenAI-compatible URLs (a real vLLM, the
// fake one, the Anvil router) and the matched direct-versus-routed comparison.
//
//	anvil-bench run --url URL --model M --clients 16 --requests 500
//	anvil-bench run --scenario heterogeneous --url ROUTER --model chat --label capacity --json r.json
//	anvil-bench compare --member URL1 --member URL2 --direct-model M --url ROUTER --model ALIAS --clients 16 --requests 500
//	anvil-bench report RAW.jsonl --markdown r.md
package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/internal/cli"
)

// Exit codes: 0 success, 1 the run failed or stopped early, 2 usage or invalid input.
const (
	exitFailure = cli.ExitFailure
	exitUsage   = cli.ExitUsage
)

// errStopped is returned when a run stopped early; its report says why.
var errStopped = errors.New("the run stopped early (see the report)")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cli.Code(cli.Execute(ctx, newRoot(stdout, stderr), args, stderr))
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := cli.NewRoot("anvil-bench", "Load generator for OpenAI-compatible URLs, and matched direct-versus-routed comparisons")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRun(), newCompare(), newReport())
	return root
}
