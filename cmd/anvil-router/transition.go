package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	cmdline "github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/manage"
)

// EnvRouterURL names the router the transition verbs and the MCP tool talk to.
const EnvRouterURL = "ANVIL_ROUTER_URL"

// maxTokenFile bounds an admin token file: a token is at most 4096 bytes, plus a newline.
const maxTokenFile = 4098

// console is what the operator commands read from outside the flags: standard input, whether it
// is a terminal, the environment and the HTTP client. main uses the process's; tests inject theirs.
type console struct {
	stdin      io.Reader
	isTerminal func() bool
	lookupEnv  func(string) (string, bool)
	doer       manage.Doer
}

func processConsole() console { return fileConsole(os.Stdin) }

// fileConsole is the process's console with standard input read from in.
func fileConsole(in *os.File) console {
	return console{
		stdin:      in,
		isTerminal: func() bool { return cmdline.IsTerminal(in) },
		lookupEnv:  os.LookupEnv,
		doer:       &http.Client{Transport: http.DefaultTransport},
	}
}

// target is how a command reaches the router: URL and admin token, from flags or the environment.
type target struct {
	router    string
	tokenFile string
}

func (t *target) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.router, "router", "", "router base URL (default $"+EnvRouterURL+")")
	cmd.Flags().StringVar(&t.tokenFile, "admin-token-file", "", "file holding the admin token (default $"+config.EnvAdminToken+"; never a flag value)")
}

// client builds the one request function's client. Every failure here is the caller's input.
func (t *target) client(con console) (*manage.Client, error) {
	url := t.router
	if url == "" {
		url, _ = con.lookupEnv(EnvRouterURL)
	}
	if url == "" {
		return nil, cmdline.Usagef("no router: pass --router URL or set %s", EnvRouterURL)
	}
	var token string
	if t.tokenFile != "" {
		f, err := os.Open(t.tokenFile)
		if err != nil {
			return nil, cmdline.UsageError{Err: errors.New("cannot read --admin-token-file")}
		}
		b, err := cmdline.ReadAtMost(f, maxTokenFile)
		_ = f.Close()
		if err != nil {
			return nil, cmdline.UsageError{Err: errors.New("cannot read --admin-token-file (at most 4096 bytes)")}
		}
		token = strings.TrimRight(string(b), "\r\n")
	} else {
		token, _ = con.lookupEnv(config.EnvAdminToken)
	}
	if token == "" {
		return nil, cmdline.Usagef("no admin token: set %s or pass --admin-token-file", config.EnvAdminToken)
	}
	c, err := manage.NewClient(con.doer, url, token)
	if err != nil {
		return nil, cmdline.UsageError{Err: err}
	}
	return c, nil
}

type transitionFlags struct {
	target
	tier, member, reason, output string
	dryRun, yes                  bool
	wait                         time.Duration
}

// verbs are the four transition commands: name, action, help.
var verbs = [...]struct{ name, action, short, long string }{
	{"transition-status", manage.ActionStatus, "Show every tier's, one tier's or one member's admission state",
		"Show the admission state of every tier (no --tier), of one tier (--tier) or of one of its members\n" +
			"(--tier and --member): state, reason, active requests and whether it is draining. Quiesce intent\n" +
			"the router keeps for members (or a tier) no longer configured is listed as \"quiesced (not\n" +
			"configured)\". Changes nothing."},
	{"quiesce", manage.ActionQuiesce, "Stop new admissions to a tier or one member",
		"Stop new admissions to a tier, or with --member to one member of a replica tier. In-flight\n" +
			"requests continue. The reason code (default \"operator\") is recorded and, with intent_file,\n" +
			"survives a restart. Asks for confirmation on a terminal (showing the endpoint's dry run);\n" +
			"without a terminal pass --yes."},
	{"drain", manage.ActionDrain, "Wait until a quiesced tier or member holds no request",
		"Wait until a quiesced scope (the tier, or one member with --member) holds no active request,\n" +
			"up to --wait. Nothing in flight is cancelled; when the wait passes the command fails with the\n" +
			"number still active. Asks for confirmation on a terminal; without a terminal pass --yes."},
	{"readmit", manage.ActionReadmit, "Admit requests again to a tier or one member",
		"Admit requests again to a tier, or with --member to one member. A member is probed first and\n" +
			"stays quiesced unless it serves its model. Tier readmission never clears a member's quiesce,\n" +
			"member readmission never the tier's. On a scope no longer configured it clears the quiesce\n" +
			"intent kept for it, so it comes back admitting. Asks for confirmation on a terminal; without\n" +
			"a terminal pass --yes."},
}

func newTransitionCmds(con console) []*cobra.Command {
	var out []*cobra.Command
	for _, v := range verbs {
		f := &transitionFlags{}
		cmd := &cobra.Command{
			Use:   use(v.action, v.name),
			Short: v.short,
			Long:  v.long,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runTransition(cmd, con, v.action, f)
			},
		}
		f.target.flags(cmd)
		fl := cmd.Flags()
		fl.StringVar(&f.tier, "tier", "", tierHelp(v.action))
		fl.StringVar(&f.member, "member", "", "member ID of a replica tier; omitted, the whole tier")
		fl.StringVar(&f.output, "output", "table", "output format: table or json")
		if v.action != manage.ActionStatus {
			fl.StringVar(&f.reason, "reason", "", "reason code for the audit log (quiesce: the recorded reason, default \"operator\")")
			fl.BoolVar(&f.dryRun, "dry-run", false, "ask the router what would change, and change nothing")
			fl.BoolVar(&f.yes, "yes", false, "do not ask for confirmation")
		}
		if v.action == manage.ActionDrain {
			fl.DurationVar(&f.wait, "wait", time.Duration(manage.DefaultWaitSeconds)*time.Second, "how long to wait, whole seconds from 1s to 1h")
		}
		out = append(out, cmd)
	}
	return out
}

// request builds and validates the request from the flags: an explicit empty --member or --reason
// is refused, never taken for omission.
func (f *transitionFlags) request(cmd *cobra.Command, action string) (manage.Request, error) {
	req := manage.Request{Action: action, Tier: f.tier, MemberID: f.member, Reason: f.reason, DryRun: f.dryRun}
	if cmd.Flags().Changed("member") && f.member == "" {
		return req, manage.ErrMemberID
	}
	if cmd.Flags().Changed("reason") && f.reason == "" {
		return req, manage.ErrReason
	}
	if cmd.Flags().Changed("wait") {
		if f.wait < time.Second || f.wait > time.Duration(manage.MaxWaitSeconds)*time.Second || f.wait%time.Second != 0 {
			return req, errors.New("--wait must be whole seconds from 1s to 1h")
		}
		req.WaitSeconds = int(f.wait / time.Second)
	}
	if f.output != "table" && f.output != "json" {
		return req, errors.New("--output must be table or json")
	}
	return req, req.Validate()
}

func runTransition(cmd *cobra.Command, con console, action string, f *transitionFlags) error {
	if action == manage.ActionStatus && !cmd.Flags().Changed("tier") && !cmd.Flags().Changed("member") {
		return runStatusAll(cmd, con, f)
	}
	req, err := f.request(cmd, action)
	if err != nil {
		return cmdline.UsageError{Err: err}
	}
	client, err := f.client(con)
	if err != nil {
		return err
	}
	if action != manage.ActionStatus && !req.DryRun && !f.yes {
		if err := confirm(cmd, con, client, req, f.output); err != nil {
			return err
		}
	}
	resp, err := sendTransition(cmd.Context(), client, req)
	if err != nil {
		return err
	}
	return render(cmd.OutOrStdout(), resp, f.output)
}

// confirm shows the endpoint's dry run of req on standard error and asks y/N on the terminal.
func confirm(cmd *cobra.Command, con console, client *manage.Client, req manage.Request, output string) error {
	if !con.isTerminal() {
		return cmdline.Usagef("%s changes router state: pass --yes to confirm (standard input is not a terminal)", req.Action)
	}
	preview := req
	preview.DryRun = true
	resp, err := sendTransition(cmd.Context(), client, preview)
	if err != nil {
		return err
	}
	errOut := cmd.ErrOrStderr()
	fmt.Fprintln(errOut, "dry run:")
	if err := render(errOut, resp, output); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "%s %s? [y/N] ", req.Action, scopeName(req.Tier, req.MemberID))
	line, _ := bufio.NewReader(con.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errors.New("not confirmed; nothing changed")
}

// sendTransition runs the request under a deadline that covers a drain's wait; an invalid request is the
// caller's input, every other failure a runtime one.
func sendTransition(ctx context.Context, client *manage.Client, req manage.Request) (manage.Response, error) {
	limit := 30 * time.Second
	if req.Action == manage.ActionDrain && !req.DryRun {
		limit += time.Duration(req.Wait()) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	resp, err := client.Transition(ctx, req)
	var p *manage.Problem
	if errors.As(err, &p) {
		return resp, cmdline.UsageError{Err: err}
	}
	return resp, err
}

func scopeName(tier, member string) string {
	if member == "" {
		return tier
	}
	return tier + "/" + member
}

// render writes a response as JSON or as a table of the tier and its members.
func render(w io.Writer, resp manage.Response, output string) error {
	if output == "json" {
		return cmdline.WriteJSON(w, resp)
	}
	dry := ""
	if resp.DryRun {
		dry = " (dry run)"
	}
	fmt.Fprintf(w, "%s %s: %s%s\n", resp.Action, scopeName(resp.Tier, resp.MemberID), resp.Result, dry)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tSTATE\tREASON\tACTIVE\tMAX\tDRAINING")
	s := resp.Snapshot
	row := func(name, state, reason string, active, limit int64, draining bool) {
		if reason == "" {
			reason = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%t\n", name, state, reason, active, limit, draining)
	}
	if s.Kind != manage.KindNotConfigured {
		row(s.ID, s.State, s.Reason, s.Active, s.MaxConcurrency, s.Draining)
	} else if len(resp.Retained) == 0 || resp.Retained[0].MemberID != "" {
		fmt.Fprintf(tw, "%s\tnot configured\t-\t-\t-\t-\n", s.ID)
	}
	for _, m := range s.Members {
		row(s.ID+"/"+m.ID, m.State, m.Reason, m.Active, m.MaxConcurrency, m.Draining)
	}
	// Intent kept for scopes the configuration no longer has: applied again when they come back,
	// cleared by a readmit of the scope.
	for _, k := range resp.Retained {
		fmt.Fprintf(tw, "%s\tquiesced (not configured)\t%s\t-\t-\t-\n", scopeName(s.ID, k.MemberID), k.Reason)
	}
	return tw.Flush()
}
