package bench

import (
	"context"
	"strconv"
	"strings"
)

// Pair is a matched comparison: one plan sent to the members directly (client-side round robin)
// and through the router, Rounds times.
type Pair struct {
	Direct, Routed Target
	Rounds         int  // 1 to MaxRounds
	RoutedFirst    bool // round 0 starts with the routed run; the order alternates every round either way
}

// RunFunc runs plan p against one target of one round: Run, or Run wrapped by the caller (a
// progress display around it).
type RunFunc func(ctx context.Context, c *Client, p Plan, t Target, round int) (*RunResult, error)

// Paired is what a comparison sent: the raw header naming both targets (direct, then routed, each
// with why any of its rounds stopped early), every record in the order the runs ended, and the
// runs themselves.
type Paired struct {
	Header  RawHeader
	Records []Record
	Runs    []*RunResult
}

// RunPaired sends p to both targets of pair, round after round, with the same arrivals, shapes and
// seed. The order alternates every round so neither target always meets a warm or a cold machine;
// every run starts on fresh connections (c's idle ones are closed after each). A cancelled ctx ends
// the comparison after the round under way; a failed run ends it at once with its error. run nil
// is Run.
func RunPaired(ctx context.Context, c *Client, p *Plan, pair Pair, run RunFunc) (*Paired, error) {
	if run == nil {
		run = func(ctx context.Context, c *Client, p Plan, t Target, round int) (*RunResult, error) {
			return Run(ctx, c, p, t, round, &Live{})
		}
	}
	out := &Paired{}
	var stops [2][]string // per target, per round: why the run stopped early
	for round := range pair.Rounds {
		order := []int{0, 1}
		if pair.RoutedFirst != (round%2 == 1) {
			order = []int{1, 0}
		}
		for _, i := range order {
			t := pair.Direct
			if i == 1 {
				t = pair.Routed
			}
			res, err := run(ctx, c, *p, t, round)
			if err != nil {
				return nil, err
			}
			c.Close() // each target starts on fresh connections
			out.Records = append(out.Records, res.Records...)
			out.Runs = append(out.Runs, res)
			stops[i] = append(stops[i], res.Stopped)
		}
		if ctx.Err() != nil {
			break
		}
	}
	di, ri := pair.Direct.Info(), pair.Routed.Info()
	di.Stopped, ri.Stopped = joinStops(stops[0]), joinStops(stops[1])
	out.Header = Header(p, []TargetInfo{di, ri})
	return out, nil
}

// Info is the run's target as reports name it, with why the run stopped early, if it did.
func (r *RunResult) Info() TargetInfo {
	info := r.Target
	info.Stopped = r.Stopped
	return info
}

// joinStops merges the stop reasons of one target's rounds, within the raw header's field bound.
func joinStops(perRound []string) string {
	var reasons []string
	for i, s := range perRound {
		if s != "" {
			reasons = append(reasons, "round "+strconv.Itoa(i)+": "+s)
		}
	}
	s := strings.Join(reasons, "; ")
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}
