package main

import (
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/anvil-llm/anvil/router/manage"
)

// manifestPath is where make manifest writes the command manifest.
const manifestPath = "docs/CLI-COMMAND-MANIFEST.json"

func newManifestCmd(root func() *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:    "manifest",
		Short:  "Print the command manifest (" + manifestPath + ") generated from this command tree",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(manifest(root()).JSON())
			return err
		},
	}
}

// manifest walks a command tree: every visible command except cobra's own help and completion,
// with its local flags except help.
func manifest(root *cobra.Command) manage.Manifest {
	m := manage.Manifest{Program: root.Name()}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || slices.Contains([]string{"help", "completion"}, c.Name()) {
			return
		}
		cmd := manage.Command{Path: c.CommandPath(), Use: c.Use, Short: c.Short, Long: c.Long}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			cmd.Flags = append(cmd.Flags, manage.Flag{Name: f.Name, Shorthand: f.Shorthand, Type: f.Value.Type(),
				Default: f.DefValue, Usage: f.Usage})
		})
		m.Commands = append(m.Commands, cmd)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return m
}
