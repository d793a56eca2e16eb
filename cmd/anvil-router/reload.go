package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	cmdline "github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/router/manage"
)

type reloadFlags struct {
	target
	output string
}

func newReloadCmd(con console) *cobra.Command {
	f := &reloadFlags{}
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Reload a running router's config file (the same reload as SIGHUP)",
		Long: "Ask a running router to re-read its config file and the token and TLS files it names, with the\n" +
			"rules of startup (POST /admin/v1/config/reload, the same reload as SIGHUP and serve --watch).\n" +
			"Prints the result (applied or unchanged), the generation and digest in force and every change\n" +
			"by key path. A refused file changes nothing: the command fails with the router's configuration\n" +
			"error, naming the offending key.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReload(cmd, con, f) },
	}
	f.target.flags(cmd)
	cmd.Flags().StringVar(&f.output, "output", "table", "output format: table or json")
	return cmd
}

func runReload(cmd *cobra.Command, con console, f *reloadFlags) error {
	if f.output != "table" && f.output != "json" {
		return cmdline.Usagef("--output must be table or json")
	}
	client, err := f.client(con)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	resp, err := client.Reload(ctx)
	if err != nil {
		return err
	}
	if f.output == "json" {
		return cmdline.WriteJSON(cmd.OutOrStdout(), resp)
	}
	return renderReload(cmd.OutOrStdout(), resp)
}

// renderReload writes the answer for a terminal: one summary line, then one line per change.
func renderReload(w io.Writer, resp manage.ReloadResponse) error {
	digest := resp.Digest
	if len(digest) > 16 {
		digest = digest[:16]
	}
	if _, err := fmt.Fprintf(w, "reload: %s (generation %d, digest %s)\n", resp.Result, resp.Generation, digest); err != nil {
		return err
	}
	if resp.Result == manage.ReloadApplied && len(resp.Changes) == 0 {
		_, err := fmt.Fprintln(w, "  no setting changed; the files it names were re-read")
		return err
	}
	for _, c := range resp.Changes {
		if _, err := fmt.Fprintln(w, "  "+printable(c)); err != nil {
			return err
		}
	}
	return nil
}

// printable replaces control characters, so an answer cannot move the terminal's cursor.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
