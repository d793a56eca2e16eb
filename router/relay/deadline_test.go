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
}

// TestDeadlinesCauses: which deadline's cause cancels the attempt.
func TestDeadlinesCauses(t *testing.T) {
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

// TestDeadlinesLateCallback: a callback that runs after two deadlines have passed (a loaded machine,
// a held lock) cancels with the one that expired first, whichever it checks first.
func TestDeadlinesLateCallback(t *testing.T) {
	for _, tc := range []struct {
		name             string
		timeout, first   time.Duration
		want, notWant    error
		firstStoppedLeft bool
	}{
		{"the whole timeout first", time.Second, 2 * time.Second, ErrTimeout, ErrFirstByteTimeout, true},
		{"the first byte first", 2 * time.Second, time.Second, ErrFirstByteTimeout, ErrTimeout, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, dl := deadlineRig(tc.timeout, tc.first)
				defer dl.stop()
				dl.startFirstByte()
				dl.mu.Lock()
				dl.t.Stop() // hold the callback back past both deadlines
				dl.mu.Unlock()
				time.Sleep(3 * time.Second)
				dl.fire()
				assert.ErrorIs(t, context.Cause(ctx), tc.want)
				assert.NotErrorIs(t, context.Cause(ctx), tc.notWant)
				assert.Equal(t, tc.firstStoppedLeft, dl.stopFirstByte())
			})
		})
	}
}

// TestDeadlinesCancelUnderLock: stopFirstByte cannot see the first-byte deadline fired while the
// context still has no cause (the attempt would classify a nil cause as a transport failure): fire
// cancels before anyone else can take the lock. The cancel below plays the attempt in the window.
func TestDeadlinesCancelUnderLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, realCancel := context.WithCancelCause(context.Background())
		var dl *deadlines
		var windowOpen bool
		dl = newDeadlines(func(cause error) {
			if dl.mu.TryLock() { // the lock is free while canceling: an attempt could run here
				dl.mu.Unlock()
				windowOpen = true
				if !dl.stopFirstByte() {
					assert.ErrorIs(t, context.Cause(ctx), ErrFirstByteTimeout, "fired, but no cause yet")
				}
			}
			realCancel(cause)
		}, time.Minute, time.Second)
		defer dl.stop()
		dl.startFirstByte()
		assert.ErrorIs(t, causeAt(ctx, time.Second), ErrFirstByteTimeout)
		assert.False(t, windowOpen, "fire released its lock before canceling")
		assert.False(t, dl.stopFirstByte())
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
