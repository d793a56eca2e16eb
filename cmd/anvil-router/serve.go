package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	cmdline "github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/internal/logwriter"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/intent"
	"github.com/anvil-llm/anvil/router/listen"
	"github.com/anvil-llm/anvil/router/server"
	"github.com/anvil-llm/anvil/router/watch"
)

type serveFlags struct {
	config        string
	demo          bool
	listen        string
	drive         int
	watch         bool
	watchInterval time.Duration
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
			case f.watch && f.demo:
				return cmdline.Usagef("--watch works only with --config")
			case cmd.Flags().Changed("watch-interval") && !f.watch:
				return cmdline.Usagef("--watch-interval works only with --watch")
			case f.watchInterval < watch.MinInterval || f.watchInterval > watch.MaxInterval:
				return cmdline.Usagef("--watch-interval must be 100ms-1h")
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
	cmd.Flags().BoolVar(&f.watch, "watch", false, "reload the config file when it (or a token or TLS file it names) changes on disk")
	cmd.Flags().DurationVar(&f.watchInterval, "watch-interval", watch.DefaultInterval, "with --watch: how often to poll the files (100ms-1h); a change applies once seen on two polls in a row")
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
	// One Source reads the file at start-up and on every reload (SIGHUP, the endpoint, --watch),
	// with the same overrides.
	src := load.NewSource(f.config, overlayEnv(over))
	loaded, err := src.Load(ctx)
	if err != nil {
		return cmdline.UsageError{Err: err}
	}
	cfg := loaded.Config
	logOut := logwriter.New(os.Stderr, 0) // log lines leave the request path; Close writes the rest
	defer logOut.Close()
	log := newLogger(logOut, cfg.Log())
	server.ApplyRuntime(cfg.Runtime(), log) // the collector's settings, logged; GOGC and GOMEMLIMIT win
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
	v := currentVersion()
	srv, err := server.New(cfg, server.Options{Logger: log, MetricsListener: lns.Metrics, ConfigPath: f.config,
		ConfigDigest: loaded.Digest, Load: sourceLoader(src), Version: v.Version, Revision: v.Revision})
	if err != nil {
		_ = lns.Close()
	}
	if errors.Is(err, intent.ErrInvalid) || errors.Is(err, intent.ErrUnusable) || errors.Is(err, server.ErrNotRegular) ||
		errors.Is(err, server.ErrTLS) {
		// A malformed intent file, a path the operator pointed at the wrong thing (a missing or
		// read-only directory, a directory, a FIFO, a link), or a certificate that cannot be loaded is
		// refused like a malformed config.
		return cmdline.UsageError{Err: err}
	}
	if err != nil {
		return err
	}
	stopHUP := reloadOnHUP(ctx, srv)
	defer stopHUP()
	if f.watch {
		stopWatch, err := watchFile(ctx, src, loaded.Fingerprint, srv, f.watchInterval)
		if err != nil {
			_ = srv.Close()
			_ = lns.Close()
			return cmdline.UsageError{Err: err}
		}
		defer stopWatch()
	}
	return srv.Serve(ctx, lns.API)
}

// sourceLoader is the reload's LoadFunc: the Source start-up read, read again.
func sourceLoader(src *load.Source) server.LoadFunc {
	return func(ctx context.Context) (config.Config, string, error) {
		l, err := src.Load(ctx)
		return l.Config, l.Digest, err
	}
}

// watchFile runs serve --watch: it polls src's fingerprint every interval, starting from the one
// start-up loaded, and reloads (the same reload as SIGHUP) once a change has settled. It returns the
// function that stops the watcher and waits for it.
func watchFile(ctx context.Context, src *load.Source, loaded string, srv *server.Server, interval time.Duration) (func(), error) {
	w, err := watch.New(loaded, src, func(ctx context.Context) error {
		_, err := srv.ReloadFile(ctx) // refused or not, the server has logged and counted it
		return err
	}, interval)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	return func() { cancel(); <-done }, nil
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
