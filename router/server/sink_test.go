package server

import (
	"bytes"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// stalledDisk blocks every write until released, like a hung filesystem.
type stalledDisk struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (d *stalledDisk) Write(p []byte) (int, error) {
	<-d.release
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.buf.Write(p)
}

func TestAsyncSinkNeverBlocksAndKeepsOrder(t *testing.T) {
	disk := &stalledDisk{release: make(chan struct{})}
	a := newAsyncSink(disk)
	// The writer goroutine holds at most one line; the queue holds sinkQueue more. Everything past
	// that is dropped and counted while the disk is stalled, and no Write call blocks.
	total := sinkQueue + 50
	for i := range total {
		_, err := a.Write([]byte{byte('a' + i%26), '\n'})
		assert.NoError(t, err)
	}
	dropped := a.dropped.Load()
	assert.GreaterOrEqual(t, dropped, uint64(49))
	assert.LessOrEqual(t, dropped, uint64(50))
	close(disk.release)
	a.Close()
	a.Close() // idempotent
	assert.Equal(t, total-int(dropped), bytes.Count(disk.buf.Bytes(), []byte("\n")), "every queued line was written before Close returned")
	assert.Equal(t, "a\nb\nc\n", disk.buf.String()[:6], "lines keep their order")
	_, _ = a.Write([]byte("late\n"))
	assert.Equal(t, dropped+1, a.dropped.Load(), "a line after Close is dropped and counted")
}
