package watch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeFiles is a Fingerprinter whose fingerprint the test sets.
type fakeFiles struct {
	mu sync.Mutex
	fp string
}

func (f *fakeFiles) set(fp string) { f.mu.Lock(); f.fp = fp; f.mu.Unlock() }

func (f *fakeFiles) Fingerprint(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fp, nil
}

// reloads counts reload calls; refuse makes them fail.
type reloads struct {
	mu     sync.Mutex
	n      int
	refuse bool
}

func (r *reloads) reload(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.refuse {
		return errors.New("refused")
	}
	return nil
}

func (r *reloads) count() int { r.mu.Lock(); defer r.mu.Unlock(); return r.n }

// TestRunPollsOnItsInterval runs the shell on fake time: nothing happens between polls, a change
// reloads two intervals after it lands, a refusal is not retried, and Run returns when ctx ends.
func TestRunPollsOnItsInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 3 * time.Second
		files := &fakeFiles{fp: "A"}
		var r reloads
		w, err := New("A", files, r.reload, every)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		// wait lets fake time run for d; every goroutine of the bubble then settles.
		wait := func(d time.Duration) { <-time.After(d); synctest.Wait() }

		files.set("B")
		wait(every - time.Millisecond)
		assert.Equal(t, 0, r.count(), "no poll before the first interval")
		wait(time.Millisecond)
		assert.Equal(t, 0, r.count(), "first sighting of B")
		wait(every)
		assert.Equal(t, 1, r.count(), "second sighting of B reloads")
		wait(5 * every)
		assert.Equal(t, 1, r.count(), "B is in force")

		r.mu.Lock()
		r.refuse = true
		r.mu.Unlock()
		files.set("C")
		wait(2 * every)
		assert.Equal(t, 2, r.count(), "C reloads and is refused")
		wait(10 * every)
		assert.Equal(t, 2, r.count(), "a refused C is not retried")

		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			assert.NoError(t, err)
		default:
			t.Fatal("Run did not return when ctx ended")
		}
	})
}

func TestNewRefusesBadIntervals(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second, MinInterval - 1, MaxInterval + 1} {
		_, err := New("", &fakeFiles{}, func(context.Context) error { return nil }, d)
		assert.ErrorIs(t, err, ErrInterval, "%v", d)
	}
	for _, d := range []time.Duration{MinInterval, DefaultInterval, MaxInterval} {
		_, err := New("", &fakeFiles{}, func(context.Context) error { return nil }, d)
		assert.NoError(t, err, "%v", d)
	}
}
