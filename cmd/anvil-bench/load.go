package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/scenarios"
)

// loadFlags are the flags that make a Plan: a scenario's workload, or one given flag by flag.
type loadFlags struct {
	scenario     string
	endpoint     string
	clients      int
	think        time.Duration
	backoff      time.Duration
	rate         float64
	process      string
	burstiness   float64
	promptTokens string
	outputTokens string
	streaming    float64
	requests     int
	duration     time.Duration
	warmup       int
	warmupClient int
	seed         uint64
	ignoreEOS    bool
	timeout      time.Duration
	maxInFlight  int
	maxErrorRate float64
	errorWindow  int
	goodput      []string
	label        string
	defaultLabel string // the label without --label or --scenario: "run" or "compare"
}

// workloadFlags are the flags a scenario already sets.
var workloadFlags = []string{"clients", "think", "backoff", "rate", "process", "burstiness", "prompt-tokens", "output-tokens", "streaming"}

func (f *loadFlags) register(fl *pflag.FlagSet, defaultLabel string) {
	f.defaultLabel = defaultLabel
	fl.StringVar(&f.scenario, "scenario", "", "take the load from a scenario (a YAML file or an embedded name): its arrivals, shapes, seed, duration and SLOs")
	fl.StringVar(&f.endpoint, "endpoint", "chat", "chat, completions or responses")
	fl.IntVar(&f.clients, "clients", 0, "closed loop: this many clients, each sending its next request when its last one ended")
	fl.DurationVar(&f.think, "think", 0, "closed loop: pause after a success")
	fl.DurationVar(&f.backoff, "backoff", 0, "closed loop: pause after a failure without an honoured Retry-After (default 250ms)")
	fl.Float64Var(&f.rate, "rate", 0, "open loop: mean arrivals per second")
	fl.StringVar(&f.process, "process", scenarios.ProcessPoisson, "open loop: poisson, gamma or constant gaps")
	fl.Float64Var(&f.burstiness, "burstiness", 0, "open loop, gamma: the gaps' shape k (k < 1 is burstier than Poisson)")
	fl.StringVar(&f.promptTokens, "prompt-tokens", "256", "prompt length: N, or KIND:key=value,... e.g. uniform:min=64,max=1024, lognormal:median=512,sigma=0.8,min=16,max=8192")
	fl.StringVar(&f.outputTokens, "output-tokens", "128", "output length (max_tokens), in the --prompt-tokens syntax")
	fl.Float64Var(&f.streaming, "streaming", 1, "share of streamed requests, 0 to 1")
	fl.IntVar(&f.requests, "requests", 0, "measured requests to send (instead of --duration)")
	fl.DurationVar(&f.duration, "duration", 0, "send arrivals for this long (instead of --requests)")
	fl.IntVar(&f.warmup, "warmup", 0, "requests sent before the measurement and kept out of it")
	fl.IntVar(&f.warmupClient, "warmup-clients", 0, "clients sending the warm-up requests back to back (default: --clients, or 1 for an open loop); as many as the run holds warms that many connections")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of the arrivals and shapes (default: the scenario's, else 1)")
	fl.BoolVar(&f.ignoreEOS, "ignore-eos", true, "send ignore_eos so every answer has exactly the drawn output length (vLLM and the fake accept it)")
	fl.DurationVar(&f.timeout, "timeout", bench.DefaultTimeout, "per-request timeout, streaming included")
	fl.IntVar(&f.maxInFlight, "max-in-flight", 0, "over-saturation stop: end the run when more requests are in flight (0: off)")
	fl.Float64Var(&f.maxErrorRate, "max-error-rate", 0, "over-saturation stop: end the run when the failed share of the last --error-window requests exceeds this (0: off)")
	fl.IntVar(&f.errorWindow, "error-window", 0, "requests the --max-error-rate share is taken over")
	fl.StringSliceVar(&f.goodput, "goodput", nil, "SLOs for goodput in ms, vLLM's syntax: ttft:MS,tpot:MS,e2el:MS (default: the scenario's)")
	fl.StringVar(&f.label, "label", "", "report label, e.g. the router's strategy (default: the scenario's name, else "+defaultLabel+")")
}

// plan builds and validates the Plan the flags describe.
func (f *loadFlags) plan(fl *pflag.FlagSet) (bench.Plan, error) {
	var p bench.Plan
	if f.scenario != "" {
		for _, name := range workloadFlags {
			if fl.Changed(name) {
				return p, cli.Usagef("--%s cannot be combined with --scenario, which sets the load", name)
			}
		}
		sc, err := loadScenario(f.scenario)
		if err != nil {
			return p, err
		}
		p = bench.FromScenario(sc)
		if fl.Changed("requests") {
			p.Duration = 0
		}
	} else {
		w, err := f.workload(fl)
		if err != nil {
			return p, err
		}
		p = bench.Plan{Label: "run", Seed: 1, Workload: w}
	}
	if err := f.apply(fl, &p); err != nil {
		return p, err
	}
	if err := p.Validate(); err != nil {
		return p, cli.UsageError{Err: err}
	}
	return p, nil
}

// workload is the load given flag by flag.
func (f *loadFlags) workload(fl *pflag.FlagSet) (scenarios.Workload, error) {
	var w scenarios.Workload
	closed, open := fl.Changed("clients"), fl.Changed("rate")
	switch {
	case closed == open:
		return w, cli.Usagef("give --clients (closed loop) or --rate (open loop), or --scenario")
	case closed:
		for _, name := range []string{"process", "burstiness"} {
			if fl.Changed(name) {
				return w, cli.Usagef("--%s applies to the open loop (--rate)", name)
			}
		}
		w.Closed = &scenarios.Closed{Clients: f.clients, Think: f.think, Backoff: f.backoff}
	default:
		for _, name := range []string{"think", "backoff"} {
			if fl.Changed(name) {
				return w, cli.Usagef("--%s applies to the closed loop (--clients)", name)
			}
		}
		w.Open = &scenarios.Open{Process: f.process, Rate: f.rate, Shape: f.burstiness}
	}
	var err error
	if w.PromptTokens, err = bench.ParseDist(f.promptTokens); err != nil {
		return w, cli.Usagef("--prompt-tokens: %w", err)
	}
	if w.OutputTokens, err = bench.ParseDist(f.outputTokens); err != nil {
		return w, cli.Usagef("--output-tokens: %w", err)
	}
	share := f.streaming
	w.Streaming = &share
	return w, nil
}

// apply sets what every plan takes from flags, over the scenario's values when they were given.
func (f *loadFlags) apply(fl *pflag.FlagSet, p *bench.Plan) error {
	ep, err := bench.ParseEndpoint(f.endpoint)
	if err != nil {
		return cli.Usagef("--endpoint: %w", err)
	}
	if f.timeout <= 0 {
		return cli.Usagef("--timeout must be positive")
	}
	p.Endpoint, p.IgnoreEOS, p.Warmup, p.WarmupClients, p.Timeout = ep, f.ignoreEOS, f.warmup, f.warmupClient, f.timeout
	if fl.Changed("requests") {
		p.Requests = f.requests
		if p.Requests < 1 {
			return cli.Usagef("--requests must be at least 1")
		}
	}
	if fl.Changed("duration") {
		if fl.Changed("requests") {
			return cli.Usagef("give --requests or --duration, not both")
		}
		p.Duration = f.duration
	}
	if fl.Changed("seed") {
		p.Seed = f.seed
	}
	if p.Label = f.label; p.Label == "" {
		p.Label = f.defaultLabel
		if p.Scenario != "" {
			p.Label = p.Scenario
		}
	}
	p.Stop = bench.Stop{MaxInFlight: f.maxInFlight, MaxErrorRate: f.maxErrorRate, ErrorWindow: f.errorWindow}
	if fl.Changed("goodput") {
		slo, err := parseGoodput(f.goodput)
		if err != nil {
			return err
		}
		p.SLO = slo
	}
	return nil
}

// parseGoodput reads vLLM's --goodput KEY:MS pairs.
func parseGoodput(pairs []string) (bench.SLO, error) {
	var slo bench.SLO
	seen := map[string]bool{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), ":")
		ms, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || !(ms > 0 && ms <= 86_400_000) {
			return slo, cli.Usagef("--goodput: expected ttft:MS, tpot:MS or e2el:MS with 0 < MS <= 86400000")
		}
		if seen[k] {
			return slo, cli.Usagef("--goodput: %s given twice", k)
		}
		seen[k] = true
		d := time.Duration(ms * float64(time.Millisecond))
		switch k {
		case "ttft":
			slo.TTFT = d
		case "tpot":
			slo.TPOT = d
		case "e2el":
			slo.E2EL = d
		default:
			return slo, cli.Usagef("--goodput: the metrics are ttft, tpot and e2el")
		}
	}
	return slo, nil
}

// loadScenario reads arg as a scenario file when such a file exists, else as the name of an
// embedded scenario.
func loadScenario(arg string) (*scenarios.Scenario, error) {
	if info, err := os.Stat(arg); err == nil && info.Mode().IsRegular() {
		data, err := cli.ReadBounded(arg, scenarios.MaxBytes)
		if err != nil {
			return nil, err
		}
		sc, err := scenarios.Parse(data)
		if err != nil {
			return nil, cli.Usagef("%s: %w", arg, err)
		}
		return sc, nil
	}
	sc, err := scenarios.Lookup(strings.TrimSuffix(filepath.Base(arg), ".yaml"))
	if err != nil {
		return nil, cli.Usagef("--scenario %s is neither a scenario file nor an embedded scenario: %w", arg, err)
	}
	return sc, nil
}

// token reads a bearer token from a file (first line) or an environment variable; "" when
// neither is set. The token is never printed.
func token(file, env string) (string, error) {
	if file != "" {
		data, err := cli.ReadBounded(file, 64<<10)
		if err != nil {
			return "", err
		}
		line, _, _ := strings.Cut(string(data), "\n")
		t := strings.TrimSpace(line)
		if t == "" {
			return "", cli.Usagef("token file %s is empty", file)
		}
		return t, nil
	}
	if env == "" {
		return "", nil
	}
	return strings.TrimSpace(os.Getenv(env)), nil
}
