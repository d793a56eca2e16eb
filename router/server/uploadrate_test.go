package server

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipeConn is a body with a connection's read deadline, on the bubble's fake clock: when the
// deadline passes, the pending and every later read fail with os.ErrDeadlineExceeded, as a net.Conn's.
type pipeConn struct {
	pr *io.PipeReader
	pw *io.PipeWriter

	mu    sync.Mutex
	timer *time.Timer
	last  time.Time // the last deadline set
	sets  int
}

func newPipeConn() *pipeConn {
	pr, pw := io.Pipe()
	return &pipeConn{pr: pr, pw: pw}
}

func (p *pipeConn) setDeadline(at time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
	}
	p.last, p.sets = at, p.sets+1
	p.timer = time.AfterFunc(time.Until(at), func() { _ = p.pw.CloseWithError(os.ErrDeadlineExceeded) })
	return nil
}

func (p *pipeConn) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
	}
}

// send writes n bytes a chunk at a time, one chunk every interval, then ends the body. The returned
// channel closes when it stops (at the end, or at the first write after the reader closed).
func (p *pipeConn) send(n, chunk int, every time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := bytes.Repeat([]byte("a"), chunk)
		for sent := 0; sent < n; sent += chunk {
			if _, err := p.pw.Write(buf[:min(chunk, n-sent)]); err != nil {
				return
			}
			<-time.After(every)
		}
		_ = p.pw.Close()
	}()
	return done
}

var testRule = minRate{perSecond: 10, grace: 5 * time.Second}

// A body that sends a little and stalls is cut by the deadline exactly when it falls behind: after
// the grace plus the time its bytes buy at the minimum rate.
func TestRateReaderCutsAStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := newPipeConn()
		defer conn.stop()
		start := time.Now()
		r := newRateReader(conn.pr, testRule, time.Now, conn.setDeadline, start.Add(time.Hour))
		go func() { _, _ = conn.pw.Write(make([]byte, 100)) }() // then nothing
		_, err := io.ReadAll(r)
		require.ErrorIs(t, err, errUploadTooSlow)
		assert.Equal(t, 15*time.Second, time.Since(start), "5 s of grace and 100 bytes at 10 B/s")
	})
}

// A body that keeps coming, but slower than the rule, is cut too; one at the rule's rate is not.
func TestRateReaderTrickle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		every time.Duration
		cut   bool
	}{
		{"one byte a second", time.Second, true},
		{"ten bytes a second", 100 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				conn := newPipeConn()
				defer conn.stop()
				r := newRateReader(conn.pr, testRule, time.Now, conn.setDeadline, time.Now().Add(time.Hour))
				sent := conn.send(200, 1, tc.every)
				_, err := io.ReadAll(r)
				_ = conn.pr.Close()
				<-sent
				if tc.cut {
					assert.ErrorIs(t, err, errUploadTooSlow)
				} else {
					assert.NoError(t, err)
				}
			})
		})
	}
}

// The honest upload of the defaults' arithmetic: a 25 MiB audio file at 20 KiB/s (160 kbit/s) under
// the default rule (16 KiB/s after 10 s) arrives whole, and once it has ended no deadline is left on
// the connection: net/http's background read, which starts at the body's end, would fail on one and
// cancel the request's context mid-relay.
func TestRateReaderHonestLargeUpload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := newPipeConn()
		defer conn.stop()
		bound := time.Now().Add(24 * time.Hour)
		r := newRateReader(conn.pr, minRate{perSecond: 16 << 10, grace: 10 * time.Second}, time.Now, conn.setDeadline, bound)
		sent := conn.send(25<<20, 20<<10, time.Second)
		n, err := io.Copy(io.Discard, r)
		<-sent
		require.NoError(t, err)
		assert.Equal(t, int64(25<<20), n)
		assert.True(t, conn.last.IsZero(), "no deadline stays armed after the body: %v", conn.last)
	})
}

// The clock decides at each read: a body that the server's clock says is behind is cut before
// another byte is read, whatever the connection's deadline says.
func TestRateReaderReadsTheServersClock(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	var deadlines []time.Time
	r := newRateReader(bytes.NewReader(make([]byte, 100)), testRule, clock,
		func(at time.Time) error { deadlines = append(deadlines, at); return nil }, time.Now().Add(time.Hour))
	buf := make([]byte, 10)
	_, err := r.Read(buf)
	require.NoError(t, err)
	now = now.Add(6 * time.Second) // 10 bytes buy 1 s beyond the 5 s grace
	_, err = r.Read(buf)
	require.NoError(t, err, "exactly at the due time is still in time")
	now = now.Add(time.Nanosecond + time.Second) // 20 bytes buy 7 s; 7 s and 1 ns have passed
	_, err = r.Read(buf)
	assert.ErrorIs(t, err, errUploadTooSlow)
	assert.Len(t, deadlines, 2, "one deadline per read, none for the refused one")
}

// With the rule off (0 bytes a second), the reader never touches the deadline.
func TestRateReaderOff(t *testing.T) {
	set := 0
	r := newRateReader(bytes.NewReader(make([]byte, 100)), minRate{}, time.Now,
		func(time.Time) error { set++; return nil }, time.Now().Add(time.Hour))
	n, err := io.Copy(io.Discard, r)
	require.NoError(t, err)
	assert.Equal(t, int64(100), n)
	assert.Zero(t, set)
}

// A deadline error the rule did not arm (the body's own bound) stays what it was.
func TestRateReaderOwnDeadlineIsNotTheRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := newPipeConn()
		defer conn.stop()
		r := newRateReader(conn.pr, minRate{perSecond: 1, grace: time.Hour}, time.Now, conn.setDeadline, time.Now().Add(time.Minute))
		_ = conn.setDeadline(time.Now().Add(time.Minute)) // the server's own bound
		_, err := io.ReadAll(r)
		assert.True(t, errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, errUploadTooSlow), "%v", err)
	})
}
