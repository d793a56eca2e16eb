package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	cmdline "github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/internal/logwriter"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/intent"
	"github.com/anvil-llm/anvil/router/server"
)

type serveFlags struct {
	config string
	demo   bool
	listen string
	drive  int
}

func newServe() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the router (--config FILE, or --demo for an embedded demo with fake vLLM members)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case f.demo == (f.config != ""):
				return cmdline.Usagef("serve needs exactly one of --config FILE or --demo")
			case f.drive < 0 || f.drive > 100000:
				return cmdline.Usagef("--drive must be 0-100000")
			case f.drive > 0 && !f.demo:
				return cmdline.Usagef("--drive works only with --demo")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				stop() // the first signal starts a graceful shutdown; a second one kills the process
			}()
			if f.demo {
				return runDemo(ctx, cmd.OutOrStdout(), f)
			}
			return serveConfig(ctx, f)
		},
	}
	cmd.Flags().StringVar(&f.config, "config", "", "router config file (YAML)")
	cmd.Flags().BoolVar(&f.demo, "demo", false, "serve the embedded demo: fake vLLM members on loopback")
	cmd.Flags().StringVar(&f.listen, "listen", "", "listen address, overriding the config (host:port)")
	cmd.Flags().IntVar(&f.drive, "drive", 0, "demo only: drive N routed requests, print what each member served, exit")
	return cmd
}

// overlayEnv layers fixed values over the process environment for config loading.
func overlayEnv(over map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if v, ok := over[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
}

func serveConfig(ctx context.Context, f serveFlags) error {
	over := map[string]string{}
	if f.listen != "" {
		over[config.EnvListen] = f.listen
	}
	data, err := os.ReadFile(f.config)
	if err != nil {
		return cmdline.Usagef("cannot read config file: %w", err)
	}
	cfg, err := load.ParseWith(data, config.Sources{LookupEnv: overlayEnv(over), ReadFile: load.ReadTokenFile})
	if err != nil {
		return cmdline.UsageError{Err: err}
	}
	logOut := logwriter.New(os.Stderr, 0) // log lines leave the request path; Close writes the rest
	defer logOut.Close()
	log := newLogger(logOut, cfg.Log())
	srv, err := server.New(cfg, server.Options{Logger: log})
	if errors.Is(err, intent.ErrInvalid) {
		return cmdline.UsageError{Err: err} // a malformed intent file is refused like a malformed config
	}
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen())
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("listen: %w", err)
	}
	return srv.Serve(ctx, ln)
}

func newLogger(w io.Writer, l config.Log) *slog.Logger {
	opts := &slog.HandlerOptions{Level: l.SlogLevel()}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
