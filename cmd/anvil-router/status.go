package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	cmdline "github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/router/manage"
)

// use is a verb's usage line: status may omit the tier (every tier), the others may not.
func use(action, name string) string {
	if action == manage.ActionStatus {
		return name + " [--tier TIER [--member MEMBER]]"
	}
	return name + " --tier TIER [--member MEMBER]"
}

func tierHelp(action string) string {
	if action == manage.ActionStatus {
		return "tier ID; omitted, every tier"
	}
	return "tier ID (required)"
}

// runStatusAll is transition-status without --tier: the status of every configured tier, one
// block per tier in the router's order (a JSON list with --output json).
func runStatusAll(cmd *cobra.Command, con console, f *transitionFlags) error {
	if f.output != "table" && f.output != "json" {
		return cmdline.UsageError{Err: errors.New("--output must be table or json")}
	}
	client, err := f.client(con)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	all, err := client.StatusAll(ctx)
	var p *manage.Problem
	if errors.As(err, &p) {
		return cmdline.UsageError{Err: err}
	}
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.output == "json" {
		if all == nil {
			all = []manage.Response{}
		}
		return cmdline.WriteJSON(out, all)
	}
	for i, resp := range all {
		if i > 0 {
			fmt.Fprintln(out)
		}
		if err := render(out, resp, f.output); err != nil {
			return err
		}
	}
	return nil
}
