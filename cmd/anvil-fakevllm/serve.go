package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/engine/profile"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/internal/cli"
)

// shutdownGrace bounds the graceful shutdown on SIGINT/SIGTERM: streams in
// flight get this long to finish before connections are closed.
const shutdownGrace = 10 * time.Second

type serveFlags struct {
	models        []string
	lora          []string
	extraModels   []string
	profile       string
	profileFile   string
	members       int
	host          string
	basePort      int
	legacyMetrics bool
	engine        string
	faultsFile    string
	seed          uint64
	maxBodyBytes  int64
	maxAudioBytes int64
	verbose       bool
	faults        faultFlags
}

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve fake vLLM members, one listener and one engine each",
		Long: `Serve fake vLLM members on 127.0.0.1. Member i listens on --base-port + i
(ephemeral ports when --base-port is 0) and prints "member I URL" on stdout once
it accepts connections. Faults come from --faults FILE (YAML or JSON), then the
--fault-* flags override the file field by field; /admin/faults changes them at
run time. SIGINT or SIGTERM shuts down gracefully.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), cmd.Flags(), f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.models, "model", nil, "served model name, required (repeat or comma-separate for several; the first labels metrics)")
	fl.StringSliceVar(&f.lora, "lora", nil, "LoRA adapter name listed in /v1/models with the first served name as parent (repeatable)")
	fl.StringSliceVar(&f.extraModels, "extra-model", nil, "unrelated base model also listed in /v1/models, root itself and no parent (repeatable)")
	fl.StringVar(&f.profile, "profile", profile.Default, "embedded engine profile: "+strings.Join(profile.Names(), ", "))
	fl.StringVar(&f.profileFile, "profile-file", "", "engine profile YAML file (instead of --profile)")
	fl.IntVar(&f.members, "members", 1, "number of members, each with its own listener and engine")
	fl.StringVar(&f.host, "host", "127.0.0.1", "listen address")
	fl.IntVar(&f.basePort, "base-port", 0, "port of member 0; member i uses base-port+i (0: ephemeral ports)")
	fl.BoolVar(&f.legacyMetrics, "legacy-metrics", false, "emit vllm:gpu_cache_usage_perc instead of vllm:kv_cache_usage_perc (with --engine, that engine's older names)")
	fl.StringVar(&f.engine, "engine", "vllm", "serving engine to show as ("+strings.Join(fakevllm.Engines(), ", ")+"): its /metrics names and labels, /v1/models shape and health path")
	fl.StringVar(&f.faultsFile, "faults", "", "fault configuration file (YAML or JSON)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of engine jitter, fault draws and response IDs")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", fakevllm.DefaultMaxBodyBytes, "JSON request body limit in bytes")
	fl.Int64Var(&f.maxAudioBytes, "max-audio-bytes", fakevllm.DefaultMaxAudioBytes, "audio file limit of transcriptions and translations in bytes")
	fl.BoolVar(&f.verbose, "verbose", false, "log at debug level")
	f.faults.register(fl)
	return cmd
}

func serve(ctx context.Context, fl *pflag.FlagSet, f serveFlags, stdout, stderr io.Writer) error {
	opts, err := buildOptions(fl, f, stderr)
	if err != nil {
		return err
	}
	lns, err := listen(ctx, f.host, f.basePort, f.members)
	if err != nil {
		return err
	}
	cluster, err := fakevllm.StartClusterOn(opts, lns)
	if err != nil {
		return err
	}
	for _, m := range cluster.Members() {
		fmt.Fprintf(stdout, "member %d %s\n", m.Index(), m.URL())
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := cluster.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

func buildOptions(fl *pflag.FlagSet, f serveFlags, stderr io.Writer) (fakevllm.Options, error) {
	if len(f.models) == 0 {
		return fakevllm.Options{}, cli.Usagef("--model is required")
	}
	if f.members < 1 || f.members > fakevllm.MaxMembers {
		return fakevllm.Options{}, cli.Usagef("--members must be from 1 to %d", fakevllm.MaxMembers)
	}
	if f.basePort < 0 || f.basePort+f.members-1 > 65535 {
		return fakevllm.Options{}, cli.Usagef("--base-port %d with %d members leaves the port range", f.basePort, f.members)
	}
	prof, err := loadProfile(fl, f)
	if err != nil {
		return fakevllm.Options{}, err
	}
	faults, err := loadFaults(f.faultsFile)
	if err != nil {
		return fakevllm.Options{}, err
	}
	if faults, err = f.faults.apply(fl, faults); err != nil {
		return fakevllm.Options{}, cli.UsageError{Err: err}
	}
	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	opts := fakevllm.Options{
		Models: f.models, LoRA: f.lora, ExtraModels: f.extraModels, Profile: prof, Seed: f.seed, LegacyMetrics: f.legacyMetrics, Engine: f.engine, Faults: faults,
		MaxBodyBytes: f.maxBodyBytes, MaxAudioBytes: f.maxAudioBytes, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}
	if err := opts.Validate(); err != nil { // before binding any port
		return fakevllm.Options{}, cli.UsageError{Err: err}
	}
	return opts, nil
}

func loadProfile(fl *pflag.FlagSet, f serveFlags) (engine.Profile, error) {
	if f.profileFile == "" {
		p, err := profile.Lookup(f.profile)
		if err != nil {
			return engine.Profile{}, cli.UsageError{Err: err}
		}
		return p, nil
	}
	if fl.Changed("profile") {
		return engine.Profile{}, cli.Usagef("--profile and --profile-file are exclusive")
	}
	data, err := cli.ReadBounded(f.profileFile, profile.MaxFileBytes)
	if err != nil {
		return engine.Profile{}, err
	}
	p, err := profile.Parse(data)
	if err != nil {
		return engine.Profile{}, cli.Usagef("%s: %w", f.profileFile, err)
	}
	return p, nil
}

func loadFaults(path string) (fakevllm.Faults, error) {
	if path == "" {
		return fakevllm.Faults{}, nil
	}
	data, err := cli.ReadBounded(path, fakevllm.MaxFaultsBytes)
	if err != nil {
		return fakevllm.Faults{}, err
	}
	faults, err := fakevllm.ParseFaults(data)
	if err != nil {
		return fakevllm.Faults{}, cli.Usagef("%s: %w", path, err)
	}
	return faults, nil
}

// listen binds one listener per member, closing them all on failure.
func listen(ctx context.Context, host string, basePort, members int) ([]net.Listener, error) {
	var lc net.ListenConfig
	lns := make([]net.Listener, 0, members)
	for i := range members {
		port := 0
		if basePort > 0 {
			port = basePort + i
		}
		ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return nil, fmt.Errorf("member %d: %w", i, err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}
