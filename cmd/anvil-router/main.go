// Command anvil-router is Anvil's production router: serve OpenAI traffic over direct and replica
// tiers, check a config, summarize captured decision logs, report its version, and the operator
// verbs (transition-status, quiesce, drain, readmit) and MCP tool server that drive a running router.
package main

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	cmdline "github.com/anvil-llm/anvil/internal/cli"
)

// Exit codes: 0 success, 1 runtime failure, 2 usage or invalid input.
const (
	exitFailure = cmdline.ExitFailure
	exitUsage   = cmdline.ExitUsage
)

// usageError marks failures caused by the caller's input (flags, config, files), which exit 2; the
// package's tests name it so. internal/cli is imported as cmdline here because the transition
// tests declare a type cli.
type usageError = cmdline.UsageError

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	return exitCode(cmdline.Execute(context.Background(), newRoot(processConsole()), args, os.Stderr))
}

// exitCode maps an error to the process exit code. cobra reports an unknown command with a plain
// error that only its text identifies.
func exitCode(err error) int {
	if err != nil && strings.HasPrefix(err.Error(), "unknown command ") {
		return exitUsage
	}
	return cmdline.Code(err)
}

func newRoot(con console) *cobra.Command {
	root := cmdline.NewRoot("anvil-router", "Route OpenAI-style requests over direct and replica tiers")
	root.AddCommand(newServe(), newConfigCmd(), newDecisionsCmd(), newVersion(), newMCPCmd(con))
	root.AddCommand(newTransitionCmds(con)...)
	root.AddCommand(newManifestCmd(func() *cobra.Command { return newRoot(con) }))
	cmdline.UsageArgs(root)
	return root
}
