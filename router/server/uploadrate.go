package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// errUploadTooSlow is a request body that fell behind limits.min_upload_bytes_per_second once
// limits.min_upload_grace had passed: it is cut and answered with 408 (errTooSlow).
var errUploadTooSlow = errors.New("server: request body slower than the minimum upload rate")

// bodyReadTimeout is the main listener's http.Server ReadTimeout: an ordinary request's head and body
// must arrive within it.
const bodyReadTimeout = time.Minute

// maxRuleWait bounds how far ahead the rule's deadline can lie, so its arithmetic never overflows.
const maxRuleWait = 24 * time.Hour

// minRate is the minimum upload rate: once grace has passed, a body must have arrived at perSecond
// bytes a second on average since its read began, the grace not counted. perSecond 0: no rule.
type minRate struct {
	perSecond int64
	grace     time.Duration
}

// rateReader holds a request body to its minRate. Elapsed time is read on the server's clock (so a
// test can drive the rule with Options.Now); a body that stalls is cut by the connection's read
// deadline, a real I/O timer like every other, set before each read to the moment the body would fall
// behind (never past bound, the deadline the body has without the rule). When the body ends, the
// deadline is cleared, as net/http itself clears it in the read that reaches the end, before it starts
// its background read (which notices a caller that goes away). Any deadline left armed after that, the
// rule's or bound, would fail that background read and cancel the request's context in the middle of
// its relay: a stream longer than the body's bound would be cut.
type rateReader struct {
	r        io.Reader
	rule     minRate
	now      func() time.Time
	deadline func(time.Time) error // the connection's read deadline, on the wall clock
	start    time.Time
	bound    time.Time // wall clock
	read     int64
	armed    bool // the deadline in force is the rule's, earlier than bound
	ended    bool
}

func newRateReader(r io.Reader, rule minRate, now func() time.Time, deadline func(time.Time) error, bound time.Time) *rateReader {
	return &rateReader{r: r, rule: rule, now: now, deadline: deadline, start: now(), bound: bound}
}

// bodyDeadline is the read deadline of the request's connection, where the writer reaches one.
func bodyDeadline(w http.ResponseWriter) func(time.Time) error {
	rc := http.NewResponseController(w)
	return rc.SetReadDeadline
}

// due is when, on the server's clock, the body falls behind the rule: the grace plus the time the
// bytes read so far buy at the minimum rate.
func (r *rateReader) due() time.Time {
	buys := maxRuleWait
	if secs := r.read / r.rule.perSecond; secs < int64(maxRuleWait/time.Second) {
		buys = time.Duration(secs)*time.Second + time.Duration(r.read%r.rule.perSecond)*time.Second/time.Duration(r.rule.perSecond)
	}
	return r.start.Add(r.rule.grace + buys)
}

func (r *rateReader) Read(p []byte) (int, error) {
	if r.rule.perSecond <= 0 || r.ended {
		return r.r.Read(p)
	}
	now, due := r.now(), r.due()
	if now.After(due) {
		return 0, errUploadTooSlow
	}
	r.arm(time.Now().Add(due.Sub(now)))
	n, err := r.r.Read(p)
	r.read += int64(n)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		r.ended = true
		r.clear()
	case r.armed && errors.Is(err, os.ErrDeadlineExceeded):
		return n, errUploadTooSlow
	}
	return n, err
}

// arm sets the read deadline to at, or to bound when at lies past it.
func (r *rateReader) arm(at time.Time) {
	if !at.Before(r.bound) {
		r.disarm()
		return
	}
	r.armed = true
	_ = r.deadline(at) // a writer without deadlines: the rule is checked at each read only
}

// disarm puts the body's own deadline back.
func (r *rateReader) disarm() {
	if r.armed {
		r.armed = false
		_ = r.deadline(r.bound)
	}
}

// clear removes the rule's deadline once the body has ended, leaving none: net/http cleared the
// connection's own in the read that reached the end.
func (r *rateReader) clear() {
	if r.armed {
		r.armed = false
		_ = r.deadline(time.Time{})
	}
}
