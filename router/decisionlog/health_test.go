package decisionlog

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noSpace fails the writes whose number (from 1) is in fail with ENOSPC, as a full disk does.
type noSpace struct {
	mu    sync.Mutex
	calls int
	fail  map[int]bool
}

func (w *noSpace) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	if w.fail[w.calls] {
		return 0, &os.PathError{Op: "write", Path: "decisions.jsonl", Err: syscall.ENOSPC}
	}
	return len(p), nil
}

// events records SinkEvents; clock is a manual clock one second per reading.
type events struct {
	mu   sync.Mutex
	got  []SinkEvent
	tick time.Time
}

func (e *events) now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tick = e.tick.Add(time.Second)
	return e.tick
}

func (e *events) observe(ev SinkEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, ev)
}

func (e *events) kinds() []SinkEventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]SinkEventKind, len(e.got))
	for i, ev := range e.got {
		out[i] = ev.Kind
	}
	return out
}

// TestSinkHealthFollowsRunsOfFailures: every failed write is reported with its error, the run's start
// is kept in Stats.SinkFailingSince until a write succeeds, and the success is reported once.
func TestSinkHealthFollowsRunsOfFailures(t *testing.T) {
	ev := &events{tick: time.Unix(1000, 0)}
	w := &noSpace{fail: map[int]bool{2: true, 3: true, 4: true}}
	l, err := New(8, w, WithSinkHealth(ev.now, ev.observe))
	require.NoError(t, err)

	require.NoError(t, l.Add(numbered(1)))
	assert.True(t, l.Stats().SinkFailingSince.IsZero())
	require.NoError(t, l.Add(numbered(2)))
	start := l.Stats().SinkFailingSince
	require.False(t, start.IsZero(), "the run began")
	require.NoError(t, l.Add(numbered(3)))
	require.NoError(t, l.Add(numbered(4)))
	assert.Equal(t, start, l.Stats().SinkFailingSince, "a run keeps its start")
	require.NoError(t, l.Add(numbered(5)))
	st := l.Stats()
	assert.True(t, st.SinkFailingSince.IsZero(), "a success ends the run")
	assert.Equal(t, uint64(3), st.SinkErrors)
	assert.Equal(t, uint64(2), st.SinkLines)

	assert.Equal(t, []SinkEventKind{SinkWriteFailed, SinkWriteFailed, SinkWriteFailed, SinkRecovered}, ev.kinds())
	assert.True(t, errors.Is(ev.got[0].Err, syscall.ENOSPC))
	assert.Equal(t, start, ev.got[0].At)
	assert.True(t, ev.got[1].At.After(start))
}

// TestSinkHealthOnAFullDevice writes through a real file on /dev/full, where every write fails with
// ENOSPC, behind the asynchronous queue the server uses.
func TestSinkHealthOnAFullDevice(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no /dev/full on this system")
	}
	require.NoError(t, err)
	defer f.Close()
	ev := &events{tick: time.Unix(1000, 0)}
	l, err := New(64, f, WithAsyncSink(64), WithSinkHealth(ev.now, ev.observe))
	require.NoError(t, err)
	l.Start()
	for i := range 50 {
		require.NoError(t, l.Add(numbered(i)))
	}
	require.NoError(t, l.Close())
	st := l.Stats()
	assert.Equal(t, uint64(50), st.SinkErrors, "50 of 50 lines lost, and counted")
	assert.Zero(t, st.SinkLines)
	assert.Equal(t, time.Unix(1001, 0), st.SinkFailingSince, "failing since the first write")
	require.Len(t, ev.kinds(), 50)
	for _, e := range ev.got {
		assert.Equal(t, SinkWriteFailed, e.Kind)
		assert.ErrorIs(t, e.Err, syscall.ENOSPC)
	}
}

func TestSinkHealthReportsDrops(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	ev := &events{tick: time.Unix(1000, 0)}
	l, err := New(64, w, WithAsyncSink(1), WithSinkHealth(ev.now, ev.observe))
	require.NoError(t, err)
	l.Start()
	require.NoError(t, l.Add(numbered(0)))
	<-w.entered
	for i := 1; i <= 3; i++ {
		require.NoError(t, l.Add(numbered(i)))
	}
	assert.Equal(t, []SinkEventKind{SinkDropped, SinkDropped}, ev.kinds(), "one queued, two dropped")
	assert.False(t, ev.got[0].At.IsZero(), "stamped by the shell's clock")
	close(w.release)
	require.NoError(t, l.Close())
	assert.True(t, l.Stats().SinkFailingSince.IsZero(), "drops are not write failures")
}

func TestSinkHealthReportsFlushFailures(t *testing.T) {
	ev := &events{tick: time.Unix(1000, 0)}
	l, err := New(8, failingFlusher{noSpaceDiscard{}}, WithSinkHealth(ev.now, ev.observe))
	require.NoError(t, err)
	assert.ErrorIs(t, l.Flush(), errDisk)
	assert.Equal(t, []SinkEventKind{SinkWriteFailed}, ev.kinds())
	assert.False(t, l.Stats().SinkFailingSince.IsZero())
}

type noSpaceDiscard struct{}

func (noSpaceDiscard) Write(p []byte) (int, error) { return len(p), nil }

func TestSinkHealthWithoutAClock(t *testing.T) {
	w := &noSpace{fail: map[int]bool{1: true}}
	l, err := New(8, w)
	require.NoError(t, err)
	require.NoError(t, l.Add(numbered(1)))
	assert.Equal(t, uint64(1), l.Stats().SinkErrors, "counted")
	assert.True(t, l.Stats().SinkFailingSince.IsZero(), "no clock, no time")
}

func TestSinkEventKindString(t *testing.T) {
	assert.Equal(t, "write_failed", SinkWriteFailed.String())
	assert.Equal(t, "recovered", SinkRecovered.String())
	assert.Equal(t, "dropped", SinkDropped.String())
	assert.Equal(t, "invalid", SinkEventKind(9).String())
}

// TestSinkHealthOnAReadOnlyFile: a real file opened read-only refuses every write (EBADF); each is
// counted and reported, and the failing run starts at the first.
func TestSinkHealthOnAReadOnlyFile(t *testing.T) {
	path := t.TempDir() + "/decisions.jsonl"
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	ev := &events{tick: time.Unix(1000, 0)}
	l, err := New(8, f, WithSinkHealth(ev.now, ev.observe))
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, l.Add(numbered(i)))
	}
	st := l.Stats()
	assert.Equal(t, uint64(3), st.SinkErrors)
	assert.Equal(t, time.Unix(1001, 0), st.SinkFailingSince)
	require.Len(t, ev.got, 3)
	assert.ErrorIs(t, ev.got[0].Err, syscall.EBADF)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Empty(t, data)
}
