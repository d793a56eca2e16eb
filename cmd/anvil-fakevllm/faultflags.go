package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/anvil-llm/anvil/fakevllm"
)

// faultFlags are the --fault-* flags. Each one, when given, overrides the
// same field of the --faults file.
type faultFlags struct {
	httpErrors     []string
	engineDead     bool
	slowStart      time.Duration
	stepMultiplier float64
	truncateChunk  int
	truncateRate   float64
	malformedChunk int
	malformedRate  float64
	metricsMode    string
	metricsDelay   time.Duration
	metricsMissing []string
	kvBlocks       int
}

func (f *faultFlags) register(fl *pflag.FlagSet) {
	fl.StringSliceVar(&f.httpErrors, "fault-http-error", nil, "fail generation requests: STATUS=RATE, e.g. 503=0.1 (repeatable)")
	fl.BoolVar(&f.engineDead, "fault-engine-dead", false, "start with a dead engine (/health 503, generation 503)")
	fl.DurationVar(&f.slowStart, "fault-slow-start", 0, "stay not ready for this long after start")
	fl.Float64Var(&f.stepMultiplier, "fault-step-multiplier", 0, "multiply every engine step time (e.g. 2 = half speed)")
	fl.IntVar(&f.truncateChunk, "fault-truncate-after", 0, "cut stream connections after this many SSE frames")
	fl.Float64Var(&f.truncateRate, "fault-truncate-rate", 0, "fraction of streams truncated (default 1 when --fault-truncate-after is set)")
	fl.IntVar(&f.malformedChunk, "fault-malformed-at", 0, "replace this SSE frame (1-based) by invalid JSON")
	fl.Float64Var(&f.malformedRate, "fault-malformed-rate", 0, "fraction of streams with a malformed frame (default 1)")
	fl.StringVar(&f.metricsMode, "fault-metrics", "", "break /metrics: slow, hang, error, malformed, missing, oversized")
	fl.DurationVar(&f.metricsDelay, "fault-metrics-delay", 0, "delay of --fault-metrics slow (default 2s)")
	fl.StringSliceVar(&f.metricsMissing, "fault-metrics-missing", nil, "families --fault-metrics missing omits (default: the pressure families)")
	fl.IntVar(&f.kvBlocks, "fault-kv-blocks", 0, "KV squeeze: usable KV blocks (0: the profile's)")
}

// apply overrides the fields of base whose flags were given.
func (f *faultFlags) apply(fl *pflag.FlagSet, base fakevllm.Faults) (fakevllm.Faults, error) {
	out := base
	if fl.Changed("fault-http-error") {
		errs, err := parseHTTPErrors(f.httpErrors)
		if err != nil {
			return out, err
		}
		out.HTTPErrors = errs
	}
	set := func(name string, apply func()) {
		if fl.Changed(name) {
			apply()
		}
	}
	set("fault-engine-dead", func() { out.EngineDead = f.engineDead })
	set("fault-slow-start", func() { out.SlowStart = fakevllm.Duration(f.slowStart) })
	set("fault-step-multiplier", func() { out.StepTimeMultiplier = f.stepMultiplier })
	set("fault-truncate-after", func() { out.Truncate.Chunk = f.truncateChunk })
	set("fault-truncate-rate", func() { out.Truncate.Rate = f.truncateRate })
	set("fault-malformed-at", func() { out.Malformed.Chunk = f.malformedChunk })
	set("fault-malformed-rate", func() { out.Malformed.Rate = f.malformedRate })
	set("fault-metrics", func() { out.Metrics.Mode = fakevllm.MetricsMode(f.metricsMode) })
	set("fault-metrics-delay", func() { out.Metrics.Delay = fakevllm.Duration(f.metricsDelay) })
	set("fault-metrics-missing", func() { out.Metrics.Missing = f.metricsMissing })
	set("fault-kv-blocks", func() { out.KVBlocks = f.kvBlocks })
	return out.Normalize()
}

// parseHTTPErrors parses STATUS=RATE pairs.
func parseHTTPErrors(pairs []string) ([]fakevllm.HTTPErrorFault, error) {
	out := make([]fakevllm.HTTPErrorFault, 0, len(pairs))
	for _, p := range pairs {
		status, rate, ok := strings.Cut(p, "=")
		s, err1 := strconv.Atoi(strings.TrimSpace(status))
		r, err2 := strconv.ParseFloat(strings.TrimSpace(rate), 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("--fault-http-error %q: want STATUS=RATE, e.g. 503=0.1", p)
		}
		out = append(out, fakevllm.HTTPErrorFault{Status: s, Rate: r})
	}
	return out, nil
}
