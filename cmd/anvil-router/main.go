// Command anvil-router is Anvil's production router: serve OpenAI traffic over direct and replica
// tiers, check a config, summarize captured decision logs, report its version.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes: 0 success, 1 runtime failure, 2 usage or invalid input.
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks failures caused by the caller's input (flags, config, files), which exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(os.Stderr, "anvil-router:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "anvil-router",
		Short:         "Route OpenAI-style requests over direct and replica tiers",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newServe(), newConfigCmd(), newDecisionsCmd(), newVersion())
	return root
}
