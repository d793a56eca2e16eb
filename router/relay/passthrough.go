package relay

import (
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
//
// For a keyed upstream every read is scanned for the key (keyScan) before it is written, and the bytes
// at its end that could begin the key stay at the head of the copy buffer until the next read shows
// they do not (at most the longest form of the key less one byte, usually none): the body is cut
// before a byte of the key is written.
func (r *Relay) passThrough(ctx, upCtx context.Context, w http.ResponseWriter, resp *http.Response, er *eventReader, res *Result) {
	if resp.ContentLength > r.opts.MaxResponseBytes {
		finish(w, res, failure{decisionlog.EndTransport, ErrResponseTooLarge})
		return
	}
	ct := resp.Header.Get("Content-Type")
	if er.scan.contains(ct) {
		finish(w, res, failure{decisionlog.EndHTTPError, ErrUpstreamKeyEcho})
		return
	}
	h := w.Header()
	if ct != "" {
		h.Set("Content-Type", ct)
	}
	if resp.ContentLength >= 0 && bodyAllowed(resp.StatusCode) {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	h.Set("X-Accel-Buffering", "no") // tell buffering reverse proxies to pass the bytes through
	w.WriteHeader(resp.StatusCode)
	res.Status, res.Wrote = resp.StatusCode, true

	bp := r.copyBuffer()
	defer r.copyBufs.Put(bp)
	if f, ok := r.copyBody(ctx, upCtx, w, er, *bp); !ok {
		cut(res, f)
		return
	}
	res.Outcome, _ = decisionlog.Terminal(decisionlog.EndComplete, res.Status)
}

// copyBody copies the body through buf, holding back what may begin the key; it reports the failure
// that ended the copy early, or ok.
func (r *Relay) copyBody(ctx, upCtx context.Context, w http.ResponseWriter, er *eventReader, buf []byte) (failure, bool) {
	rc := http.NewResponseController(w)
	var total int64
	held := 0 // bytes held back at the head of buf
	for {
		n, err := er.br.Read(buf[held:])
		if total += int64(n); total > r.opts.MaxResponseBytes {
			return failure{decisionlog.EndTransport, ErrResponseTooLarge}, false
		}
		if er.scan.feed(buf[held : held+n]) {
			return failure{decisionlog.EndHTTPError, ErrUpstreamKeyEcho}, false
		}
		keep := 0
		if err == nil {
			keep = er.scan.pending() // at the end nothing more can complete the key
		}
		out := held + n - keep
		if out > 0 {
			if _, werr := w.Write(buf[:out]); werr != nil {
				return writeFailed(ctx), false
			}
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				return writeFailed(ctx), false
			}
		}
		held = copy(buf, buf[out:held+n])
		switch {
		case errors.Is(err, io.EOF):
			return failure{}, true
		case err != nil:
			f := classify(ctx, upCtx, err)
			if f.end == decisionlog.EndTransport {
				f = failure{decisionlog.EndCut, ErrTruncated} // short of its length, or reset mid-way
			}
			return f, false
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
