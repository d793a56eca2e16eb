package relay

import (
	"errors"
	"io"
	"sync"
)

// streamBody is a streamed request body (Upstream.BodyStream) as the transport reads it. It remembers
// the first failure of the caller's reader, which is the caller refusing its own body mid-way, not a
// transport failure, and it starts the first-byte deadline when the body has been read to its end.
type streamBody struct {
	r     io.Reader
	ended func()

	mu  sync.Mutex // the transport reads in its own goroutine; the relay checks after Do returns
	err error
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		b.ended()
	case err != nil && !errors.Is(err, io.ErrClosedPipe):
		// A closed pipe is the transport's own Close (the upstream answered or the connection failed
		// while it was still sending): the attempt's failure, never the caller's body.
		b.mu.Lock()
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}
	return n, err
}

// Close closes the caller's reader when it can be closed: the transport closes the body once it is
// done with it, written or not, so a producer behind a pipe stops at once.
func (b *streamBody) Close() error {
	if c, ok := b.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// failed reports whether reading the caller's body failed.
func (b *streamBody) failed() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err != nil
}
