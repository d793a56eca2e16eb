// Command anvil-router is Anvil's production router: serve OpenAI traffic over direct and replica
// tiers, check a config, summarize captured decision logs, report its version, and the operator
// verbs (transition-status, quiesce, drain, readmit, reload) and MCP tool server that drive a running
// router.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

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
	root := newRoot(processConsole())
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(os.Stderr, "anvil-router:", err)
	return exitCode(err)
}

// exitCode maps an error to the process exit code. cobra reports an unknown command with a plain
// error that only its text identifies.
func exitCode(err error) int {
	var ue usageError
	if err == nil {
		return 0
	}
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command ") {
		return exitUsage
	}
	return exitFailure
}

func newRoot(con console) *cobra.Command {
	root := &cobra.Command{
		Use:           "anvil-router",
		Short:         "Route OpenAI-style requests over direct and replica tiers",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newServe(), newConfigCmd(), newDecisionsCmd(), newVersion(), newMCPCmd(con))
	root.AddCommand(newTransitionCmds(con)...)
	root.AddCommand(newReloadCmd(con))
	root.AddCommand(newManifestCmd(func() *cobra.Command { return newRoot(con) }))
	usageArgs(root)
	return root
}

// usageArgs makes every positional-argument refusal a usage error (exit 2), as flag errors are.
func usageArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}
