package bench

import (
	"fmt"
	"io"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Progress is a live mpb bar of one run: requests completed out of the total (or, for a run
// bounded by a duration, time elapsed out of it), with the requests in flight, the failures and
// the completion rate. It reads the run's Live counters; it never touches the requests.
type Progress struct {
	p    *mpb.Progress
	bar  *mpb.Bar
	stop chan struct{}
	done chan struct{}
}

// StartProgress draws the bar on out until Stop. total is the run's request count (warm-up
// included), or 0 for a run bounded by window.
func StartProgress(out io.Writer, label string, live *Live, total int64, window time.Duration) *Progress {
	start := time.Now()
	byTime := total == 0
	if byTime {
		total = max(window.Milliseconds(), 1)
	}
	p := mpb.New(mpb.WithOutput(out), mpb.WithWidth(40), mpb.WithRefreshRate(200*time.Millisecond))
	status := decor.Any(func(decor.Statistics) string {
		done := live.Done.Load()
		rate := float64(done) / max(time.Since(start).Seconds(), 1e-3)
		return fmt.Sprintf("done %d  in flight %d  errors %d  %.1f req/s", done, live.InFlight.Load(), live.Failed.Load(), rate)
	}, decor.WCSyncSpaceR)
	bar := p.AddBar(total,
		mpb.PrependDecorators(decor.Name(label, decor.WCSyncSpaceR), decor.Elapsed(decor.ET_STYLE_GO)),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), status),
		mpb.BarRemoveOnComplete(),
	)
	pr := &Progress{p: p, bar: bar, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-pr.stop:
				return
			case <-tick.C:
			}
			if byTime {
				bar.SetCurrent(min(time.Since(start).Milliseconds(), total-1))
			} else {
				bar.SetCurrent(min(live.Done.Load(), total-1))
			}
		}
	}()
	return pr
}

// Stop completes and removes the bar.
func (p *Progress) Stop() {
	close(p.stop)
	<-p.done
	p.bar.SetTotal(-1, true)
	p.p.Wait()
}
