package logwriter_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

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

	want := "first\nlogwriter: 5 log lines dropped: the log output was not keeping up\n"
	for i := range 11 {
		want += fmt.Sprintf("line %03d\n", i)
	}
	assert.Equal(t, want+"x", out.String())
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
