package cli

import "github.com/spf13/cobra"

// NoArgs refuses positional arguments as a usage error naming the command.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return Usagef("%s takes no arguments, got %d", cmd.Name(), len(args))
	}
	return nil
}

// ExactArgs is cobra.ExactArgs whose refusal is a usage error.
func ExactArgs(n int) cobra.PositionalArgs { return Usage(cobra.ExactArgs(n)) }

// MaximumNArgs is cobra.MaximumNArgs whose refusal is a usage error.
func MaximumNArgs(n int) cobra.PositionalArgs { return Usage(cobra.MaximumNArgs(n)) }

// Usage makes check's refusal a usage error.
func Usage(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return UsageError{err}
		}
		return nil
	}
}

// UsageArgs makes every positional-argument refusal in the tree under c a usage error, as flag
// errors are.
func UsageArgs(c *cobra.Command) {
	if c.Args != nil {
		c.Args = Usage(c.Args)
	}
	for _, sub := range c.Commands() {
		UsageArgs(sub)
	}
}
