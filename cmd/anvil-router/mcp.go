package main

import (
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/router/mcp"
)

func newMCPCmd(con console) *cobra.Command {
	var t target
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the router_transition tool over the Model Context Protocol on standard input and output",
		Long: "Serve the router_transition tool (status, quiesce, drain, readmit of a tier or one member) over the\n" +
			"Model Context Protocol on standard input and output, for an MCP client that starts this command.\n" +
			"The tool sends the same request as the CLI verbs to the router named by --router or " + EnvRouterURL + ",\n" +
			"with the admin token from --admin-token-file or ANVIL_ADMIN_TOKEN; neither is a tool argument.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := t.client(con)
			if err != nil {
				return err
			}
			bi, ok := debug.ReadBuildInfo()
			return mcp.ServeStdio(cmd.Context(), client, buildVersion(version, revision, bi, ok).Version)
		},
	}
	t.flags(cmd)
	return cmd
}
