package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	cmdline "github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/internal/logwriter"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/intent"
	"github.com/anvil-llm/anvil/router/listen"
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
	reload := fileLoader(f.config, over)
	cfg, digest, err := reload(ctx)
	if err != nil {
		return cmdline.UsageError{Err: err}
	}
	logOut := logwriter.New(os.Stderr, 0) // log lines leave the request path; Close writes the rest
	defer logOut.Close()
	log := newLogger(logOut, cfg.Log())
	// The sockets systemd holds (socket activation) come first, so a restart refuses no connection.
	lns, err := listen.Open(ctx, listen.Addrs{API: cfg.Listen(), Metrics: cfg.Metrics().Listen})
	if errors.Is(err, listen.ErrActivation) {
		return cmdline.UsageError{Err: err}
	}
	if err != nil {
		return err
	}
	if len(lns.Activated) > 0 {
		log.Info("socket activation", "sockets", lns.Activated)
	}
	srv, err := server.New(cfg, server.Options{Logger: log, MetricsListener: lns.Metrics,
		ConfigPath: f.config, ConfigDigest: digest, Load: reload})
	if err != nil {
		_ = lns.Close()
	}
	if errors.Is(err, intent.ErrInvalid) {
		return cmdline.UsageError{Err: err} // a malformed intent file is refused like a malformed config
	}
	if err != nil {
		return err
	}
	stopHUP := reloadOnHUP(ctx, srv)
	defer stopHUP()
	return srv.Serve(ctx, lns.API)
}

// fileLoader reads and validates the config file with the startup rules (the same environment
// overrides, the same token files) and returns it with the sha256 hex digest of the bytes it parsed:
// the loader of startup and of every reload.
func fileLoader(path string, over map[string]string) server.LoadFunc {
	return func(context.Context) (config.Config, string, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return config.Config{}, "", fmt.Errorf("cannot read config file: %w", err)
		}
		sum := sha256.Sum256(data)
		cfg, err := load.ParseWith(data, config.Sources{LookupEnv: overlayEnv(over), ReadFile: load.ReadTokenFile})
		if err != nil {
			return config.Config{}, "", err
		}
		return cfg, hex.EncodeToString(sum[:]), nil
	}
}

// reloadOnHUP reloads the config file on every SIGHUP until ctx ends: the same reload as POST
// /admin/v1/config/reload (the server logs and counts each attempt). It returns the function that
// stops listening for the signal.
func reloadOnHUP(ctx context.Context, srv *server.Server) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-quit:
				return
			case <-hup:
				_, _ = srv.ReloadFile(ctx) // refused or not, the server has logged and counted it
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(quit)
		<-done
	}
}

func newLogger(w io.Writer, l config.Log) *slog.Logger {
	opts := &slog.HandlerOptions{Level: l.SlogLevel()}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
