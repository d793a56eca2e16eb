package main

import (
	"io"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/anvil-llm/anvil/internal/cli"
)

// progress shows an mpb bar for a run that is still going after a second of wall time, on a
// terminal only; shorter runs and pipes stay quiet.
type progress struct {
	out     io.Writer
	label   string
	enabled bool
	start   time.Time
	p       *mpb.Progress
	bar     *mpb.Bar
	total   int64
}

func newProgress(out io.Writer, label string, enabled bool) *progress {
	if !cli.IsTerminal(out) {
		enabled = false
	}
	return &progress{out: out, label: label, enabled: enabled, start: time.Now()}
}

// update is sim.Options.Progress: virtual time done out of total.
func (p *progress) update(done, total time.Duration) {
	if !p.enabled {
		return
	}
	if p.bar == nil {
		if time.Since(p.start) < time.Second {
			return
		}
		p.total = int64(total / time.Millisecond)
		p.p = mpb.New(mpb.WithOutput(p.out), mpb.WithWidth(50))
		p.bar = p.p.AddBar(p.total,
			mpb.PrependDecorators(decor.Name(p.label, decor.WCSyncSpaceR), decor.Elapsed(decor.ET_STYLE_GO)),
			mpb.AppendDecorators(decor.Percentage()),
			mpb.BarRemoveOnComplete(),
		)
	}
	p.bar.SetCurrent(int64(done / time.Millisecond))
}

// finish completes and removes the bar, if one was shown.
func (p *progress) finish() {
	if p.bar == nil {
		return
	}
	p.bar.SetCurrent(p.total)
	p.p.Wait()
}
