package decisionlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

func numbered(i int) Record {
	r := directRecord()
	r.RequestID = fmt.Sprintf("req-%d", i)
	r.Start = t0.Add(time.Duration(i) * time.Millisecond)
	return r
}

func ids(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.RequestID
	}
	return out
}

func TestNewRefusesBadConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name string
		ring int
		opts []Option
		want error
	}{
		{"zero ring", 0, nil, ErrConfig},
		{"negative ring", -1, nil, ErrConfig},
		{"huge ring", MaxRingSize + 1, nil, ErrConfig},
		{"tiny line bound", 8, []Option{WithMaxLineBytes(ident.MinLineBytes - 1)}, ErrConfig},
		{"huge line bound", 8, []Option{WithMaxLineBytes(ident.MaxLineBytes + 1)}, ErrConfig},
		{"bad tier id", 8, []Option{WithMembership(map[string]map[string]int64{"Pool": membership3()})}, ErrInvalidEvidence},
		{"one member", 8, []Option{WithMembership(map[string]map[string]int64{"pool": {"m1": 4}})}, ErrInvalidEvidence},
		{"zero ceiling", 8, []Option{WithMembership(map[string]map[string]int64{"pool": {"m1": 4, "m2": 0}})}, ErrInvalidEvidence},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := New(tc.ring, nil, tc.opts...)
			assert.Nil(t, l)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	l, err := New(MaxRingSize, io.Discard, WithMaxLineBytes(ident.MinLineBytes))
	require.NoError(t, err)
	assert.NotNil(t, l)
}

func TestRingKeepsNewestInOrder(t *testing.T) {
	l := mustLog(t, 3, nil)
	assert.Empty(t, l.Recent(10))
	for i := range 2 {
		require.NoError(t, l.Add(numbered(i)))
	}
	assert.Equal(t, []string{"req-0", "req-1"}, ids(l.Recent(10)))
	for i := 2; i < 8; i++ {
		require.NoError(t, l.Add(numbered(i)))
		assert.Len(t, l.Recent(100), 3, "ring bound")
	}
	assert.Equal(t, []string{"req-5", "req-6", "req-7"}, ids(l.Recent(3)))
	assert.Equal(t, []string{"req-6", "req-7"}, ids(l.Recent(2)), "newest last")
	assert.Equal(t, []string{"req-7"}, ids(l.Recent(1)))
	assert.Nil(t, l.Recent(0))
	assert.Nil(t, l.Recent(-5))
	assert.Equal(t, uint64(8), l.Stats().Added)
}

func TestRecentReturnsCopies(t *testing.T) {
	l := mustLog(t, 4, nil)
	require.NoError(t, l.Add(capacityRecord(t)))
	got := l.Recent(1)
	require.Len(t, got, 1)
	require.NotNil(t, got[0].ReplicaScheduler)
	got[0].Tier = "mutated"
	*got[0].ReplicaScheduler = scheduler.Decision{}
	again := l.Recent(1)
	assert.Equal(t, "pool", again[0].Tier)
	sel, ok := again[0].ReplicaScheduler.SelectedMemberID()
	assert.True(t, ok)
	assert.Equal(t, "m1", sel)
}

func TestAddStoresPrivateEvidence(t *testing.T) {
	l := mustLog(t, 4, nil)
	r := capacityRecord(t)
	require.NoError(t, l.Add(r))
	*r.ReplicaScheduler = scheduler.Decision{} // the caller's pointer is not the stored one
	got := l.Recent(1)[0]
	require.NotNil(t, got.ReplicaScheduler)
	assert.Equal(t, 2, got.ReplicaScheduler.EligibleCount())
}

func TestAddNormalizesStart(t *testing.T) {
	l := mustLog(t, 4, nil)
	r := directRecord()
	r.Start = time.Now().In(time.FixedZone("east", 3600)) // a monotonic reading and a zone
	require.NoError(t, l.Add(r))
	got := l.Recent(1)[0].Start
	assert.Equal(t, time.UTC, got.Location())
	assert.True(t, got.Equal(r.Start))
	assert.Equal(t, got.String(), got.Round(0).String(), "no monotonic reading")
}

func TestLineBoundDropsWholeLines(t *testing.T) {
	var sink bytes.Buffer
	l := mustLog(t, 8, &sink, WithMaxLineBytes(ident.MinLineBytes))
	require.NoError(t, l.Add(directRecord()))
	require.NoError(t, l.Add(worstCase(t)))
	require.NoError(t, l.Add(refusedRecord()))
	st := l.Stats()
	assert.Equal(t, uint64(1), st.SinkOversize)
	assert.Equal(t, uint64(2), st.SinkLines)
	assert.Equal(t, uint64(3), st.Added, "the ring keeps the oversize record")
	recs, err := ReadJSONL(&sink, 10)
	require.NoError(t, err, "no torn JSON in the sink")
	assert.Equal(t, []string{"req-direct-1", "req-refused-1"}, ids(recs))
}

// flakyWriter fails or shortens chosen writes.
type flakyWriter struct {
	buf   bytes.Buffer
	calls int
	fail  map[int]int // call number -> bytes to accept before failing
}

var errDisk = errors.New("disk full")

func (w *flakyWriter) Write(p []byte) (int, error) {
	w.calls++
	if n, ok := w.fail[w.calls]; ok {
		w.buf.Write(p[:n])
		return n, errDisk
	}
	return w.buf.Write(p)
}

func TestSinkErrorsAreCountedAndLinesStayWhole(t *testing.T) {
	w := &flakyWriter{fail: map[int]int{2: 0, 3: 10}}
	l, err := New(8, w)
	require.NoError(t, err)
	for i := range 5 {
		require.NoError(t, l.Add(numbered(i)), "sink failures are not Add errors")
	}
	st := l.Stats()
	assert.Equal(t, uint64(2), st.SinkErrors)
	assert.Equal(t, uint64(3), st.SinkLines)
	assert.Equal(t, uint64(5), st.Added)

	lines := strings.Split(strings.TrimSuffix(w.buf.String(), "\n"), "\n")
	require.Len(t, lines, 4, "the torn write stays on its own line")
	assert.Len(t, lines[1], 10)
	for _, i := range []int{0, 2, 3} {
		_, err := ReadJSONL(strings.NewReader(lines[i]+"\n"), 1)
		assert.NoError(t, err, "line %d", i)
	}
	assert.Contains(t, lines[3], `"request_id":"req-4"`)
}

func TestFlushAndClose(t *testing.T) {
	var file bytes.Buffer
	buf := bufio.NewWriterSize(&file, 4096)
	l, err := New(8, buf)
	require.NoError(t, err)
	require.NoError(t, l.Add(directRecord()))
	assert.Zero(t, file.Len(), "still buffered")
	require.NoError(t, l.Flush())
	assert.NotZero(t, file.Len())

	require.NoError(t, l.Add(refusedRecord()))
	require.NoError(t, l.Close())
	flushed := file.Len()
	recs, err := ReadJSONL(bytes.NewReader(file.Bytes()), 10)
	require.NoError(t, err)
	assert.Len(t, recs, 2, "Close flushed")

	require.NoError(t, l.Close(), "idempotent")
	require.NoError(t, l.Add(numbered(9)))
	require.NoError(t, l.Flush())
	assert.Equal(t, flushed, file.Len(), "nothing reaches the sink after Close")
	st := l.Stats()
	assert.Equal(t, uint64(1), st.SinkAfterClose)
	assert.Equal(t, uint64(3), st.Added)
	assert.Equal(t, "req-9", l.Recent(1)[0].RequestID)
}

type failingFlusher struct{ io.Writer }

func (failingFlusher) Flush() error { return errDisk }

func TestFlushErrorIsCountedAndReturned(t *testing.T) {
	l, err := New(8, failingFlusher{io.Discard})
	require.NoError(t, err)
	assert.ErrorIs(t, l.Flush(), errDisk)
	assert.ErrorIs(t, l.Close(), errDisk)
	assert.Equal(t, uint64(2), l.Stats().SinkErrors)
	assert.NoError(t, l.Close(), "a closed log no longer flushes")
}

func TestConcurrentAddAndRecent(t *testing.T) {
	const writers, perWriter = 8, 200
	var sink bytes.Buffer // Log serializes sink writes
	l := mustLog(t, 64, &sink)
	evidence := capacityRecord(t)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range perWriter {
				r := numbered(w*perWriter + i)
				if i%2 == 0 {
					r = evidence
					r.RequestID = fmt.Sprintf("cap-%d-%d", w, i)
				}
				assert.NoError(t, l.Add(r))
			}
		}()
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		<-start
		for {
			select {
			case <-stop:
				return
			default:
			}
			recs := l.Recent(64)
			if !assert.LessOrEqual(t, len(recs), 64) {
				return
			}
			for _, r := range recs {
				if r.ReplicaScheduler != nil {
					_ = r.ReplicaScheduler.Scores() // read evidence while Adds run
				}
			}
		}
	}()
	close(start)
	wg.Wait()
	close(stop)
	<-done
	st := l.Stats()
	assert.Equal(t, uint64(writers*perWriter), st.Added)
	assert.Equal(t, uint64(writers*perWriter), st.SinkLines)
	assert.Len(t, l.Recent(1000), 64)
	recs, err := ReadJSONL(&sink, writers*perWriter)
	require.NoError(t, err, "concurrent writes never interleave within a line")
	assert.Len(t, recs, writers*perWriter)
}

// blockingWriter holds every write until release is closed, so a test controls when the disk "stalls".
type blockingWriter struct {
	release chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func TestAsyncSinkNeverBlocksAddAndDropsPastItsQueue(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	l, err := New(64, w, WithAsyncSink(2))
	require.NoError(t, err)
	l.Start()
	require.NoError(t, l.Add(numbered(0)))
	<-w.entered // the writer holds line 0 on the stalled disk; the queue is empty again
	for i := 1; i <= 5; i++ {
		require.NoError(t, l.Add(numbered(i)), "Add returns while the disk is stalled")
	}
	st := l.Stats()
	assert.Equal(t, uint64(3), st.SinkDropped, "lines 3-5 overflow the two-line queue")
	assert.Equal(t, uint64(6), st.Added, "the ring keeps every record")
	close(w.release)
	require.NoError(t, l.Close())
	recs, err := ReadJSONL(bytes.NewReader(w.buf.Bytes()), 10)
	require.NoError(t, err)
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.RequestID
	}
	assert.Equal(t, []string{"req-0", "req-1", "req-2"}, ids, "in order, the queued lines written out by Close")
	assert.Equal(t, uint64(3), l.Stats().SinkLines)
}

func TestAsyncSinkNeverStartedIsWrittenOutByClose(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(8, &buf, WithAsyncSink(0))
	require.NoError(t, err)
	require.NoError(t, l.Add(numbered(1)))
	require.NoError(t, l.Add(numbered(2)))
	assert.Zero(t, buf.Len(), "nothing is written before Start")
	require.NoError(t, l.Close())
	recs, err := ReadJSONL(&buf, 10)
	require.NoError(t, err)
	assert.Len(t, recs, 2)
	require.NoError(t, l.Add(numbered(3)))
	assert.Equal(t, uint64(1), l.Stats().SinkAfterClose)
	l.Start() // after Close: nothing to start
	require.NoError(t, l.Close(), "idempotent")
}

func TestAsyncSinkKeepsLinesWholeAfterShortWrites(t *testing.T) {
	w := &flakyWriter{fail: map[int]int{2: 0, 3: 10}}
	l, err := New(8, w, WithAsyncSink(16))
	require.NoError(t, err)
	l.Start()
	for i := range 5 {
		require.NoError(t, l.Add(numbered(i)))
	}
	require.NoError(t, l.Close())
	st := l.Stats()
	assert.Equal(t, uint64(2), st.SinkErrors)
	assert.Equal(t, uint64(1), st.SinkShortWrites)
	assert.Equal(t, uint64(3), st.SinkLines)
	lines := strings.Split(strings.TrimSuffix(w.buf.String(), "\n"), "\n")
	require.Len(t, lines, 4, "the torn write stays on its own line")
	for _, i := range []int{0, 2, 3} {
		_, err := ReadJSONL(strings.NewReader(lines[i]+"\n"), 1)
		assert.NoError(t, err, "line %d", i)
	}
}

func TestAsyncSinkStatsWhileRunning(t *testing.T) {
	var buf lockedBuffer
	l, err := New(64, &buf, WithAsyncSink(1024))
	require.NoError(t, err)
	l.Start()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				assert.NoError(t, l.Add(numbered(w*100+i)))
				_ = l.Stats() // read while the writer runs: -race proves the counters are safe
			}
		})
	}
	wg.Wait()
	require.NoError(t, l.Close())
	st := l.Stats()
	assert.Equal(t, uint64(400), st.SinkLines+st.SinkDropped)
	recs, err := ReadJSONL(bytes.NewReader(buf.bytes()), 1000)
	require.NoError(t, err)
	assert.Len(t, recs, int(st.SinkLines))
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}
