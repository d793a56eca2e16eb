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
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes: 0 success, 1 the run failed or stopped early, 2 usage or invalid input.
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks failures caused by the caller's input (arguments, flags, files).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errStopped is returned when a run stopped early; its report says why.
var errStopped = errors.New("the run stopped early (see the report)")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "anvil-bench:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "anvil-bench",
		Short:         "Load generator for OpenAI-compatible URLs, and matched direct-versus-routed comparisons",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newRun(), newCompare(), newReport())
	return root
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %d", cmd.Name(), len(args))
	}
	return nil
}
