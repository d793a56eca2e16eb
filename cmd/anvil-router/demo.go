package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/anvil-llm/anvil/internal/demo"
	"github.com/anvil-llm/anvil/internal/logwriter"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/server"
)

// runDemo serves the router over internal/demo's fake members; with --drive it drives the demo's
// load through it, prints what each member served and exits.
func runDemo(ctx context.Context, out io.Writer, f serveFlags) error {
	listen := f.listen
	switch {
	case listen == "" && f.drive > 0:
		listen = "127.0.0.1:0" // a driven demo must not collide with anything already on 8080
	case listen == "":
		if listen = os.Getenv(config.EnvListen); listen == "" {
			listen = demo.DefaultListen
		}
	}
	// The members sit beside the router (its port + 1 to + 4), so their URLs are known in advance;
	// a router on an ephemeral port has members on ephemeral ports.
	members, err := demo.StartMembers(ctx, demo.MemberBasePort(listen))
	if err != nil {
		return err
	}
	defer members.Close()

	apiToken, adminToken := demo.Token(config.EnvAPIToken), demo.Token(config.EnvAdminToken)
	cfg, err := members.Config(listen, apiToken, adminToken)
	if err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	logOut := io.Writer(io.Discard) // the driven demo prints its own report
	if f.drive == 0 {
		w := logwriter.New(os.Stderr, 0)
		defer w.Close()
		logOut = w
	}
	v := currentVersion()
	srv, err := server.New(cfg, server.Options{Logger: newLogger(logOut, cfg.Log()), Version: v.Version, Revision: v.Revision})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen())
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("listen: %w", err)
	}
	base := "http://" + ln.Addr().String()
	members.PrintBanner(out, base, apiToken, adminToken, f.drive > 0)

	if f.drive == 0 {
		return srv.Serve(ctx, ln)
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, ln) }()
	report, driveErr := demo.Drive(ctx, base, apiToken, f.drive)
	stopServe()
	if err := <-served; err != nil {
		return err
	}
	report.Print(out, members, srv.Decisions().Recent(1<<30))
	return driveErr
}
