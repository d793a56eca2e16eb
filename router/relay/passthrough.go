package relay

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// passThroughBuffer is the one copy buffer of a passed-through body: memory per attempt is this and
// the read buffer, whatever the body's size.
const passThroughBuffer = 32 << 10

// passThrough relays a successful body as it arrives (Upstream.PassThrough: audio bytes): the headers
// at once, then every read as it comes, flushed. Content-Length is relayed when the upstream gave one,
// so a client can see a cut too. At most MaxResponseBytes are relayed: a larger announced length is a
// clean 502 before anything is written; a body that grows past it is cut. A failure after the headers
// sets Result.Cut: a byte stream has no in-band error, so the caller aborts the connection.
func (r *Relay) passThrough(ctx, upCtx context.Context, w http.ResponseWriter, resp *http.Response, br *bufio.Reader, res *Result) {
	if resp.ContentLength > r.opts.MaxResponseBytes {
		finish(w, res, failure{decisionlog.EndTransport, ErrResponseTooLarge})
		return
	}
	h := w.Header()
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		h.Set("Content-Type", ct)
	}
	if resp.ContentLength >= 0 && bodyAllowed(resp.StatusCode) {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	h.Set("X-Accel-Buffering", "no") // tell buffering reverse proxies to pass the bytes through
	w.WriteHeader(resp.StatusCode)
	res.Status, res.Wrote = resp.StatusCode, true
	rc := http.NewResponseController(w)

	bp := r.copyBuffer()
	defer r.copyBufs.Put(bp)
	buf := *bp
	var total int64
	for {
		n, err := br.Read(buf)
		if total += int64(n); total > r.opts.MaxResponseBytes {
			cut(res, failure{decisionlog.EndTransport, ErrResponseTooLarge})
			return
		}
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				cut(res, writeFailed(ctx))
				return
			}
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				cut(res, writeFailed(ctx))
				return
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			res.Outcome, _ = decisionlog.Terminal(decisionlog.EndComplete, res.Status)
			return
		case err != nil:
			f := classify(ctx, upCtx, err)
			if f.end == decisionlog.EndTransport {
				f = failure{decisionlog.EndCut, ErrTruncated} // short of its length, or reset mid-way
			}
			cut(res, f)
			return
		}
	}
}

func (r *Relay) copyBuffer() *[]byte {
	if bp, ok := r.copyBufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, passThroughBuffer)
	return &b
}

// cut records a passed-through body's early end after its headers. The client that left needs no
// abort; any other ending does.
func cut(res *Result, f failure) {
	res.Outcome, res.Status = decisionlog.Terminal(f.end, res.Status)
	res.Err = f.err
	res.Cut = f.end != decisionlog.EndClientCancel
}
