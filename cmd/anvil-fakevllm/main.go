// Command anvil-fakevllm runs vLLM-compatible fake members: each one an
// engine model driven in real time behind vLLM's OpenAI surface, /metrics and
// fault injection. Exit codes: 0 success, 1 runtime failure, 2 usage error.
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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cli.Code(cli.Execute(ctx, newRootCmd(stdout, stderr), args, stderr))
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := cli.NewRoot("anvil-fakevllm", "vLLM-compatible fake servers with a realistic engine model and fault injection")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newServeCmd(stdout, stderr))
	return root
}
