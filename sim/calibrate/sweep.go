package calibrate

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/internal/ceiling"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// ErrInvalid is wrapped by every refusal of Options.
var ErrInvalid = errors.New("invalid calibration")

// Bounds and defaults of a sweep.
const (
	MaxCeilings       = 512
	MaxCeiling        = 4096
	MaxWindows        = 100
	DefaultMaxWindows = 10
	MinWindow         = time.Millisecond
	MaxWindow         = time.Hour
	// windowCycles is how many request cycles at the largest ceiling a default window holds.
	windowCycles = 5
)

// Options are one sweep.
type Options struct {
	Profile  engine.Profile
	Workload scenarios.Workload // its prompt and output lengths; the loop is the ceiling's own
	// WorkloadName labels the report (the scenario it came from).
	WorkloadName string
	Seed         uint64
	// Ceilings are the swept ceilings, ascending and distinct; nil: DefaultCeilings(Profile).
	Ceilings []int
	// Window is one measurement window of virtual time; 0: DefaultWindow.
	Window time.Duration
	// MaxWindows bounds how long a step is held, its first (warm-up) window included; 0: 10.
	MaxWindows int
	Tolerance  float64 // 0: ceiling.DefaultTolerance
	KneeShare  float64 // 0: ceiling.DefaultKneeShare
	SLO        ceiling.SLO
}

// DefaultCeilings sweeps from 1 to a quarter past the profile's max_num_seqs (so the curve shows
// the plateau beyond it) in about 32 steps (ceiling.Steps), with max_num_seqs itself included.
func DefaultCeilings(p engine.Profile) []int {
	top := min(max((p.MaxNumSeqs*5+3)/4, p.MaxNumSeqs+2), MaxCeiling)
	out := append(ceiling.Steps(max(1, p.MaxNumSeqs/32), top), min(p.MaxNumSeqs, top))
	slices.Sort(out)
	return slices.Compact(out)
}

// DefaultWindow holds about five request cycles at the largest ceiling: the mean output length
// times the step time with every ceiling's request decoding at the mean context, at least 1 s.
func DefaultWindow(p engine.Profile, w scenarios.Workload, top int) time.Duration {
	return min(max(windowCycles*time.Duration(cycle(p, w, top)), time.Second), MaxWindow)
}

// cycle is one request's expected time in nanoseconds at top sequences. Every product meeting an
// addition is rounded explicitly (float64(...)), so no compiler may fuse it into an FMA and the
// default window, and with it every default sweep's bytes, are the same on every architecture.
func cycle(p engine.Profile, w scenarios.Workload, top int) float64 {
	out := w.OutputTokens.Expected()
	ctx := w.PromptTokens.Expected() + sim.ChatTemplateTokens + out/2
	seqs := float64(min(top, p.MaxNumSeqs))
	step := float64(p.StepBase) + float64(float64(p.DecodePerSeq)*seqs) + float64(float64(p.ContextPerToken)*seqs*ctx)
	return float64(out*step) + float64(float64(p.PrefillPerToken)*w.PromptTokens.Expected())
}

// resolve applies the defaults and checks o.
func (o *Options) resolve() error {
	if err := o.Profile.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := o.Workload.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if o.Ceilings == nil {
		o.Ceilings = DefaultCeilings(o.Profile)
	}
	if len(o.Ceilings) == 0 || len(o.Ceilings) > MaxCeilings {
		return fmt.Errorf("%w: 1 to %d ceilings", ErrInvalid, MaxCeilings)
	}
	for i, c := range o.Ceilings {
		if c < 1 || c > MaxCeiling || i > 0 && c <= o.Ceilings[i-1] {
			return fmt.Errorf("%w: ceilings must ascend, each from 1 to %d", ErrInvalid, MaxCeiling)
		}
	}
	if o.Window == 0 {
		o.Window = DefaultWindow(o.Profile, o.Workload, o.Ceilings[len(o.Ceilings)-1])
	}
	o.MaxWindows = cmpOr(o.MaxWindows, DefaultMaxWindows)
	o.Tolerance = cmpOr(o.Tolerance, ceiling.DefaultTolerance)
	o.KneeShare = cmpOr(o.KneeShare, ceiling.DefaultKneeShare)
	switch {
	case o.Window < MinWindow || o.Window > MaxWindow:
		return fmt.Errorf("%w: window must be from 1ms to 1h", ErrInvalid)
	case o.MaxWindows < 3 || o.MaxWindows > MaxWindows:
		return fmt.Errorf("%w: max windows must be from 3 to %d (a warm-up and two to compare)", ErrInvalid, MaxWindows)
	case !(o.Tolerance > 0 && o.Tolerance < 1), !(o.KneeShare > 0 && o.KneeShare <= 1):
		return fmt.Errorf("%w: tolerance must be in (0, 1) and knee share in (0, 1]", ErrInvalid)
	}
	longest := maxTokens(o.Workload.PromptTokens) + sim.ChatTemplateTokens + maxTokens(o.Workload.OutputTokens)
	if longest > o.Profile.ModelLen() {
		return fmt.Errorf("%w: the workload's longest request exceeds the profile's max_model_len", ErrInvalid)
	}
	return nil
}

func maxTokens(d scenarios.Dist) int {
	if d.Dist == scenarios.DistConstant {
		return int(d.Value)
	}
	return int(d.Max)
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Run sweeps every ceiling of o and returns the report.
func Run(o Options) (*Report, error) {
	if err := o.resolve(); err != nil {
		return nil, err
	}
	r := &Report{Format: Format, Profile: o.Profile.Name, Workload: o.WorkloadName, Seed: o.Seed, SLO: o.SLO,
		SLOText: o.SLO.String(), Window: o.Window, MaxWindows: o.MaxWindows, Tolerance: o.Tolerance,
		KneeShare: o.KneeShare}
	for _, c := range o.Ceilings {
		p, err := step(&o, c)
		if err != nil {
			return nil, err
		}
		r.Points = append(r.Points, p)
	}
	r.Recommendation = ceiling.Recommend(r.Points, o.SLO, o.KneeShare)
	return r, nil
}
