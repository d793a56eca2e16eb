package qualification

import (
	"fmt"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/internal/ceiling"
	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/scenarios"
)

// Defaults and bounds of the calibration phase.
const (
	DefaultCalibrationStep   = 1
	DefaultCalibrationWindow = 5 * time.Second
	DefaultCalibrationMax    = time.Minute
	minCalibrationWindow     = 10 * time.Millisecond
	maxCalibrationWindow     = 10 * time.Minute
	maxCalibrationSteps      = 512
)

// CalibrationDoc is the optional ceiling sweep: a closed loop sent to one member directly, its
// concurrency stepped from 1 up to max_concurrency, each step held until stable.
type CalibrationDoc struct {
	Member          string        `yaml:"member"`
	MaxConcurrency  int           `yaml:"max_concurrency"`
	Step            int           `yaml:"step"`
	Window          time.Duration `yaml:"window"`
	MaxStepDuration time.Duration `yaml:"max_step_duration"`
	Tolerance       float64       `yaml:"tolerance"`
	KneeShare       float64       `yaml:"knee_share"`
	TTFTP99         time.Duration `yaml:"ttft_p99"`
	TPOTP99         time.Duration `yaml:"tpot_p99"`
}

// Calibration is the resolved ceiling sweep.
type Calibration struct {
	Member          string        `json:"member"`
	MaxConcurrency  int           `json:"max_concurrency"`
	Step            int           `json:"step"`
	Window          time.Duration `json:"window_ns"`
	MaxStepDuration time.Duration `json:"max_step_duration_ns"`
	Tolerance       float64       `json:"tolerance"`
	KneeShare       float64       `json:"knee_share"`
	SLO             ceiling.SLO   `json:"slo"`
}

// Steps are the swept concurrencies.
func (c *Calibration) Steps() []int { return ceiling.Steps(c.Step, c.MaxConcurrency) }

// calibrationStep resolves the sweep after the SLO, whose targets it defaults to.
func (p *Plan) calibrationStep(f *File) error { return p.calibration(f.Phases.Calibration) }

// calibration validates the sweep. A target of 0 (or absent) is the gate's own TTFT or TPOT p99
// target, so the sweep judges what the gate judges; without one either, it is not checked.
func (p *Plan) calibration(d *CalibrationDoc) error {
	if d == nil {
		return nil
	}
	c := Calibration{Member: d.Member, MaxConcurrency: d.MaxConcurrency, Step: max(d.Step, 0),
		Window: cmpOr(d.Window, DefaultCalibrationWindow), MaxStepDuration: cmpOr(d.MaxStepDuration, DefaultCalibrationMax),
		Tolerance: d.Tolerance, KneeShare: d.KneeShare,
		SLO: ceiling.SLO{TTFT: cmpOr(d.TTFTP99, p.SLO.TTFTP99), TPOT: cmpOr(d.TPOTP99, p.SLO.TPOTP99)}}
	if c.Member == "" {
		c.Member = p.Tier.Members[0].ID
	}
	if d.Step == 0 {
		c.Step = DefaultCalibrationStep
	}
	if c.Tolerance == 0 {
		c.Tolerance = ceiling.DefaultTolerance
	}
	if c.KneeShare == 0 {
		c.KneeShare = ceiling.DefaultKneeShare
	}
	if err := c.validate(p); err != nil {
		return err
	}
	p.Phases.Calibration = &c
	return nil
}

func (c *Calibration) validate(p *Plan) error {
	const path = "phases.calibration"
	switch {
	case !slices.ContainsFunc(p.Tier.Members, func(m Member) bool { return m.ID == c.Member }):
		return invalid(path+".member", "must be one of the tier's members")
	case c.MaxConcurrency < 1 || c.MaxConcurrency > min(ident.MaxCeiling, scenarios.MaxClients):
		return invalidf(path+".max_concurrency", "is required: the sweep's bound, 1 to %d", min(ident.MaxCeiling, scenarios.MaxClients))
	case c.Step < 1 || c.Step > c.MaxConcurrency:
		return invalid(path+".step", "must be from 1 to max_concurrency")
	case ceiling.StepCount(c.Step, c.MaxConcurrency) > maxCalibrationSteps:
		return invalidf(path+".step", "the sweep may have at most %d steps: raise the step", maxCalibrationSteps)
	case c.Window < minCalibrationWindow || c.Window > maxCalibrationWindow:
		return invalid(path+".window", "must be from 10ms to 10m")
	case c.MaxStepDuration < max(3*c.Window, time.Second) || c.MaxStepDuration > time.Hour:
		return invalid(path+".max_step_duration", "must be from 1s and three windows to 1h")
	case !(c.Tolerance > 0 && c.Tolerance < 1):
		return invalid(path+".tolerance", "must be a share in (0, 1)")
	case !(c.KneeShare > 0 && c.KneeShare <= 1):
		return invalid(path+".knee_share", "must be a share in (0, 1]")
	case c.SLO.TTFT < 0 || c.SLO.TTFT > 24*time.Hour || c.SLO.TPOT < 0 || c.SLO.TPOT > 24*time.Hour:
		return invalid(path, "ttft_p99 and tpot_p99 must be from 0 (the gate's target) to 24h")
	}
	if bp := p.calibrationPlan(c, c.MaxConcurrency); bp.Validate() != nil {
		return invalid(path, "is not a load the bench can send (check its size against the workload)")
	}
	return nil
}

// calibrationPlan is one step of the sweep: the workload's shapes, every one streamed and run to
// its drawn length (no cancellation), from a closed loop of exactly clients with no think time,
// whose arrivals last at most the step's bound (the step ends earlier once stable).
func (p *Plan) calibrationPlan(c *Calibration, clients int) bench.Plan {
	bp := p.basePlan(p.Qualification + "-calibration")
	one := 1.0
	w := bp.Workload
	w.Open, w.Cancel, w.Streaming = nil, nil, &one
	w.Closed = &scenarios.Closed{Clients: clients, Backoff: scenarios.DefaultBackoff}
	if pc := p.Workload.Closed; pc != nil {
		w.Closed.Backoff = pc.Backoff
	}
	bp.Workload, bp.Duration = w, c.MaxStepDuration
	bp.SLO = bench.SLO{TTFT: c.SLO.TTFT, TPOT: c.SLO.TPOT}
	return bp
}

// calibrationText is the calibration phase in words, for the plan.
func calibrationText(p *Plan, c *Calibration) string {
	steps := c.Steps()
	slo := c.SLO.String()
	if slo == "" {
		slo = "none (the recommendation is the knee)"
	}
	worst := time.Duration(len(steps)) * (c.MaxStepDuration + p.RequestTimeout)
	return fmt.Sprintf("Sends a closed loop directly to member `%s` (model `%s`, every request streamed, no think time), its concurrency stepped over %d values from 1 to %d (step %d). "+
		"Each step is held in windows of %s until two consecutive windows after the first (warm-up) one differ by less than %g of the larger one's output-token throughput, at most %s; "+
		"the sweep stops at the first step whose TTFT or TPOT p99 (over the requests that ended in its last two windows) breaks the SLO (%s), in which a request failed, or which could not be measured. "+
		"At worst the phase lasts %s (every step held to its bound, then drained for up to the request timeout of %s). Records the curve (calibration/curve.json, plots/calibration-latency-throughput.png, raw/calibration-N.jsonl) "+
		"and recommends the smaller of the knee (smallest concurrency reaching %g of the best throughput) and the largest concurrency meeting the SLO, below any step whose requests failed. Changes no configuration.",
		c.Member, p.Tier.ServedModel, len(steps), c.MaxConcurrency, c.Step, c.Window, c.Tolerance, c.MaxStepDuration, slo, worst, p.RequestTimeout, c.KneeShare)
}
