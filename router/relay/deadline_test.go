package relay

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// deadlineRig is one attempt's context with its deadlines, on synctest's clock.
func deadlineRig(timeout, firstByte time.Duration) (context.Context, *deadlines) {
	ctx, cancel := context.WithCancelCause(context.Background())
	return ctx, newDeadlines(cancel, timeout, firstByte)
}

// causeAt waits until d has passed on the bubble's clock and returns the context's cause then.
func causeAt(ctx context.Context, d time.Duration) error {
	time.Sleep(d)
	synctest.Wait()
	return context.Cause(ctx)
}

func TestDeadlines(t *testing.T) {
	t.Run("the whole timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, dl := deadlineRig(10*time.Second, 0)
			defer dl.stop()
			assert.NoError(t, causeAt(ctx, 10*time.Second-time.Nanosecond))
			assert.ErrorIs(t, causeAt(ctx, time.Nanosecond), ErrTimeout)
		})
	})
	t.Run("the first byte, from its start", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, dl := deadlineRig(time.Minute, 2*time.Second)
			defer dl.stop()
			assert.NoError(t, causeAt(ctx, 5*time.Second), "not started: an upload still being sent")
			dl.startFirstByte()
			dl.startFirstByte() // once
			assert.NoError(t, causeAt(ctx, 2*time.Second-time.Nanosecond))
			assert.ErrorIs(t, causeAt(ctx, time.Nanosecond), ErrFirstByteTimeout)
			assert.False(t, dl.stopFirstByte(), "it fired")
			assert.False(t, dl.stopFirstByte(), "and says so again")
		})
	})
	t.Run("a stopped first byte leaves the whole timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, dl := deadlineRig(10*time.Second, 2*time.Second)
			defer dl.stop()
			dl.startFirstByte()
			assert.NoError(t, causeAt(ctx, time.Second))
			assert.True(t, dl.stopFirstByte())
			assert.True(t, dl.stopFirstByte())
			assert.NoError(t, causeAt(ctx, 8*time.Second), "the first-byte deadline is gone")
			assert.ErrorIs(t, causeAt(ctx, time.Second), ErrTimeout)
		})
	})
	t.Run("stopped before it started, it never starts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, dl := deadlineRig(0, time.Second)
			defer dl.stop()
			assert.True(t, dl.stopFirstByte())
			dl.startFirstByte()
			assert.NoError(t, causeAt(ctx, time.Hour))
		})
	})
	t.Run("the earlier of the two wins", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, dl := deadlineRig(time.Second, 5*time.Second)
			defer dl.stop()
			dl.startFirstByte()
			assert.ErrorIs(t, causeAt(ctx, time.Second), ErrTimeout)
			assert.True(t, dl.stopFirstByte(), "the first-byte deadline did not fire")
		})
	})
	t.Run("the wait after [DONE]", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, dl := deadlineRig(time.Minute, time.Second)
			defer dl.stop()
			dl.startFirstByte()
			assert.True(t, dl.stopFirstByte())
			dl.startDrain()
			assert.NoError(t, causeAt(ctx, doneDrainWait-time.Nanosecond))
			assert.ErrorIs(t, causeAt(ctx, time.Nanosecond), errDrainWait)
		})
	})
	t.Run("nothing fires after stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, dl := deadlineRig(time.Second, time.Second)
			dl.startFirstByte()
			dl.startDrain()
			dl.stop()
			assert.NoError(t, causeAt(ctx, time.Hour))
		})
	})
}

// TestDeadlinesAllocations: all three deadlines of an attempt cost three allocations (the three
// separate timers cost seven).
func TestDeadlinesAllocations(t *testing.T) {
	_, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	allocs := testing.AllocsPerRun(100, func() {
		dl := newDeadlines(cancel, time.Minute, time.Minute)
		dl.startFirstByte()
		dl.stopFirstByte()
		dl.startDrain()
		dl.stop()
	})
	assert.LessOrEqual(t, allocs, 3.0)
}
