package logwriter_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/logwriter"
)

// syncBuffer is the output: a buffer safe to write from the writer's goroutine and read after Close.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gate is an output stalled until released: each Write reports that it started, then waits.
type gate struct {
	syncBuffer
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate {
	return &gate{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *gate) Write(p []byte) (int, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.syncBuffer.Write(p)
}

func TestEveryLineOnceAndInOrderPerWriter(t *testing.T) {
	var out syncBuffer
	w := logwriter.New(&out, 0)
	const writers, lines = 8, 500
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				_, err := fmt.Fprintf(w, "writer=%d line=%d\n", g, i)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	require.NoError(t, w.Close())

	next := make([]int, writers)
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, got, writers*lines)
	for _, l := range got {
		var g, i int
		_, err := fmt.Sscanf(l, "writer=%d line=%d", &g, &i)
		require.NoError(t, err, l)
		require.Equal(t, next[g], i, "writer %d's lines out of order", g)
		next[g]++
	}
}

func TestStalledOutputDropsAndCountsWithoutBlocking(t *testing.T) {
	out := newGate()
	w := logwriter.New(out, 100)
	_, _ = w.Write([]byte("first\n"))
	<-out.entered // the goroutine holds "first" and is stuck in the output

	for i := range 15 { // eleven 9-byte lines fit the bound, four are dropped; none of these calls waits
		n, err := fmt.Fprintf(w, "line %03d\n", i)
		require.NoError(t, err)
		require.Equal(t, 9, n)
	}
	_, _ = w.Write([]byte("x"))      // 9*11+1 = 100 bytes: still fits
	_, _ = w.Write([]byte("over\n")) // dropped: 5 in all
	close(out.release)
	require.NoError(t, w.Close())

	want := "first\n"
	for i := range 11 {
		want += fmt.Sprintf("line %03d\n", i)
	}
	assert.Equal(t, want+"x"+"logwriter: log lines dropped: 5 (the log output was not keeping up)\n", out.String())
}

func TestOneDroppedLineIsReported(t *testing.T) {
	out := newGate()
	w := logwriter.New(out, 4)
	_, _ = w.Write([]byte("a\n"))
	<-out.entered
	_, _ = w.Write([]byte("b\n"))
	_, _ = w.Write([]byte("c\n"))
	_, _ = w.Write([]byte("d\n")) // over the bound
	close(out.release)
	require.NoError(t, w.Close())
	assert.Equal(t, "a\nb\nc\nlogwriter: log lines dropped: 1 (the log output was not keeping up)\n", out.String())
}

// A line written while Close is still writing the buffered ones waits for them.
func TestAWriteDuringCloseComesAfterTheBufferedLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newGate()
		w := logwriter.New(out, 0)
		_, _ = w.Write([]byte("a\n"))
		<-out.entered // the goroutine is stuck writing "a"
		_, _ = w.Write([]byte("b\n"))
		closed := make(chan error)
		go func() { closed <- w.Close() }()
		synctest.Wait()
		late := make(chan struct{})
		go func() {
			_, _ = w.Write([]byte("c\n"))
			close(late)
		}()
		synctest.Wait()
		require.Empty(t, out.entered, "the late line went to the output before the buffered ones")
		close(out.release)
		require.NoError(t, <-closed)
		<-late
		assert.Equal(t, "a\nb\nc\n", out.String())
	})
}

func TestCloseGivesUpOnAStalledOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newGate()
		w := logwriter.New(out, 0)
		_, _ = w.Write([]byte("stuck\n"))
		<-out.entered
		start := time.Now()
		require.ErrorIs(t, w.Close(), logwriter.ErrStalled)
		assert.Equal(t, logwriter.CloseWait, time.Since(start))
		close(out.release) // let the goroutine end inside the bubble
	})
}

// Writers racing Close lose no line and keep their order, whichever side of Close each line falls.
func TestWritersRacingClose(t *testing.T) {
	var out syncBuffer
	w := logwriter.New(&out, 0)
	const writers, lines = 4, 300
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				_, _ = fmt.Fprintf(w, "writer=%d line=%d\n", g, i)
			}
		})
	}
	require.NoError(t, w.Close())
	wg.Wait()
	next := make([]int, writers)
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var g, i int
		_, err := fmt.Sscanf(l, "writer=%d line=%d", &g, &i)
		require.NoError(t, err, l)
		require.Equal(t, next[g], i, "writer %d's lines out of order", g)
		next[g]++
	}
	assert.Equal(t, []int{lines, lines, lines, lines}, next)
}

func TestWritesAfterCloseGoStraightThrough(t *testing.T) {
	var out syncBuffer
	w := logwriter.New(&out, 0)
	_, _ = w.Write([]byte("buffered\n"))
	require.NoError(t, w.Close())
	require.NoError(t, w.Close()) // twice is harmless
	n, err := w.Write([]byte("after close\n"))
	require.NoError(t, err)
	assert.Equal(t, 12, n)
	assert.Equal(t, "buffered\nafter close\n", out.String())
}

func TestTheCallersBufferIsCopied(t *testing.T) {
	out := newGate()
	w := logwriter.New(out, 0)
	_, _ = w.Write([]byte("one\n"))
	<-out.entered
	p := []byte("two\n")
	_, _ = w.Write(p)
	copy(p, "XXX\n") // a log handler reuses its buffer as soon as Write returns
	close(out.release)
	require.NoError(t, w.Close())
	assert.Equal(t, "one\ntwo\n", out.String())
}

// BenchmarkWrite is the cost a request pays for its log line, written to /dev/null (a real file, so
// direct=true pays its system call) directly and through the writer, from parallel requests.
func BenchmarkWrite(b *testing.B) {
	line := []byte(`time=2026-12-01T15:00:00.000Z level=INFO msg=request request_id=0123456789abcdef01234567 path=/v1/chat/completions status=200 alias=chat tier=pool member=m0 outcome=success attempts=1 duration_ms=0` + "\n")
	for _, direct := range []bool{true, false} {
		b.Run(fmt.Sprintf("direct=%v", direct), func(b *testing.B) {
			null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			require.NoError(b, err)
			defer null.Close()
			var out io.Writer = null
			if !direct {
				w := logwriter.New(null, 0)
				defer w.Close()
				out = w
			}
			var mu sync.Mutex // a log handler's own lock around its write
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					mu.Lock()
					_, _ = out.Write(line)
					mu.Unlock()
				}
			})
		})
	}
}
