package relay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// ordinary relays a non-streaming response (or any non-2xx response). The body is read whole, within
// MaxResponseBytes, before anything is written, so that an oversized or broken body still becomes a
// clean 502 instead of a truncated 200. An error answer that could carry the upstream key (a keyed
// upstream's 401 or 403, or any error body holding the key) is replaced (see withheld); so is a
// successful answer that carries the whole key (keyScan), by a fixed 502.
func (r *Relay) ordinary(ctx, upCtx context.Context, w http.ResponseWriter, resp *http.Response, er *eventReader, res *Result, key string) {
	buf := r.getBody()
	body, err := readBounded(er.br, resp.ContentLength, r.opts.MaxResponseBytes, *buf)
	defer r.putBody(buf, body)
	switch {
	case errors.Is(err, ErrResponseTooLarge):
		finish(w, res, failure{decisionlog.EndTransport, ErrResponseTooLarge})
		return
	case err != nil:
		finish(w, res, classify(ctx, upCtx, err))
		return
	}

	if !isSuccess(resp.StatusCode) && withheld(w, resp, body, res, key) {
		return
	}
	if isSuccess(resp.StatusCode) {
		// The member did the work whatever happens to the answer next: a withheld key echo or a
		// caller gone before the write still used these tokens.
		res.Usage, _ = readUsage(body)
	}
	if isSuccess(resp.StatusCode) && (er.scan.feed(body) || er.scan.contains(resp.Header.Get("Content-Type"))) {
		finish(w, res, failure{decisionlog.EndHTTPError, ErrUpstreamKeyEcho})
		return
	}
	h := w.Header()
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		h.Set("Content-Type", ct)
	}
	if !isSuccess(resp.StatusCode) {
		if ra := resp.Header.Get("Retry-After"); ra != "" && validHeaderValue(ra) {
			h.Set("Retry-After", ra)
		}
	}
	if bodyAllowed(resp.StatusCode) {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(resp.StatusCode)
	res.Status, res.Wrote = resp.StatusCode, true
	if _, err := w.Write(body); err != nil {
		finish(w, res, writeFailed(ctx))
		return
	}
	if isSuccess(resp.StatusCode) {
		res.Outcome, _ = decisionlog.Terminal(decisionlog.EndComplete, res.Status)
		return
	}
	res.Outcome, _ = decisionlog.Terminal(decisionlog.EndHTTPError, res.Status)
	res.Err = ErrUpstreamStatus
}

// withheld answers in place of an upstream error that may carry the upstream key, and reports whether
// it did. With a key configured, a 401 or 403 means the upstream refused the router's credential: the
// caller gets a fixed 502, never the upstream's words about the key. Any other error keeps its status
// (and a clean Retry-After) and loses its body when the body, Retry-After or Content-Type holds the key
// in a form leakCheck knows.
func withheld(w http.ResponseWriter, resp *http.Response, body []byte, res *Result, key string) bool {
	if key == "" {
		return false
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		finish(w, res, failure{decisionlog.EndHTTPError, ErrUpstreamCredentials})
		return true
	}
	leaks := newLeakCheck(key)
	ra := resp.Header.Get("Retry-After")
	if !leaks.in(body) && !leaks.in([]byte(ra)) && !leaks.in([]byte(resp.Header.Get("Content-Type"))) {
		return false
	}
	if ra != "" && validHeaderValue(ra) && !leaks.in([]byte(ra)) {
		w.Header().Set("Retry-After", ra)
	}
	res.Outcome, res.Status = decisionlog.Terminal(decisionlog.EndHTTPError, resp.StatusCode)
	res.Err = ErrUpstreamStatus
	writeError(w, res, failure{decisionlog.EndHTTPError, ErrUpstreamStatus})
	return true
}

// getBody takes a buffer for an ordinary body from the pool: the body is written to the caller and
// then dropped, so its buffer can read the next one.
func (r *Relay) getBody() *[]byte {
	if p, ok := r.bodies.Get().(*[]byte); ok {
		return p
	}
	return new([]byte)
}

// putBody returns the buffer, grown to body if it was, unless it is too large to keep.
func (r *Relay) putBody(p *[]byte, body []byte) {
	if cap(body) > cap(*p) {
		*p = body
	}
	if cap(*p) > maxPooledBodyBytes {
		return
	}
	*p = (*p)[:0]
	r.bodies.Put(p)
}

// readBounded reads r to the end into buf's storage (grown as needed), failing with
// ErrResponseTooLarge as soon as more than limit bytes arrive (or are announced by a Content-Length
// hint; hint < 0 means unknown).
func readBounded(r io.Reader, hint, limit int64, buf []byte) ([]byte, error) {
	if hint > limit {
		return nil, ErrResponseTooLarge
	}
	size := 512
	if hint >= 0 {
		size = int(hint) + 1 // one spare byte so reading the EOF needs no growth
	}
	buf = slices.Grow(buf[:0], size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := min(int64(cap(buf)), limit+1) // never read more than one byte past the limit
		n, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, ErrResponseTooLarge
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// bodyAllowed mirrors RFC 9110: 1xx, 204 and 304 responses carry no body and no Content-Length.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
