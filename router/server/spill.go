package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/audioform"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/spool"
)

// An audio file part sent before the form's model field (OpenAI's Node SDK does) is held until the
// model is known: its first holdMemoryBytes in memory, reserved from the in-flight body budget with
// the caller's share like an ordinary body (when the budget has no room, none of it is in memory),
// and the rest in a spool file, reserved from the spill budget (limits.max_spill_bytes, with the
// same caller share) one spool.SpillStep at a time. Both are given back and the file removed as
// soon as the file has been sent upstream (Encode closes the hold, in the encoder goroutine), or
// when the request ends, however it ends (the handler's defer), and at the latest when the server closes (spool.Dir.Close);
// a process killed past both leaves nothing (the spool file was unlinked once created).

// holdMemoryBytes is the most of one held file kept in memory: one default max_body_bytes body.
const holdMemoryBytes = 1 << 20

// errHeldTooLarge refuses a held file past holdMemoryBytes when spilling is off (max_spill_bytes 0):
// it can never be held, so unlike a full budget it is not worth a retry.
var errHeldTooLarge = apiError{http.StatusRequestEntityTooLarge,
	"an audio file sent before the 'model' field is larger than the router holds; send 'model' first",
	"invalid_request_error", "held_file_too_large"}

// spillFloor is the least spill share of one caller: one max_audio_bytes upload held on disk from
// its first byte, in the whole spool.SpillSteps it is reserved in.
func spillFloor(maxAudio int64) int64 {
	return (maxAudio + spool.SpillStep - 1) / spool.SpillStep * spool.SpillStep
}

// heldUpload is one held file part: its spool buffer and what it took of the two budgets.
type heldUpload struct {
	s    *Server
	buf  *spool.Buffer
	h    *holder
	mem  int64
	stop func() bool // stops cutting the body's read on the request's end (cutReader.arm)
	once sync.Once   // Close runs once: from the encoder once the file is sent, and the handler's defer
	err  error       // what the one Close returned
}

// holdError is a refusal of the hold's Write: a budget, spilling off, or the disk.
type holdError struct{ err error }

func (e *holdError) Error() string { return "held audio file: " + e.err.Error() }
func (e *holdError) Unwrap() error { return e.err }

// spillRefused is the spill budget's refusal of a disk step.
type spillRefused budgetRefusal

func (spillRefused) Error() string { return "spill budget refused" }

func (u *heldUpload) Write(p []byte) (int, error) {
	n, err := u.buf.Write(p)
	if err != nil {
		err = &holdError{err}
	}
	return n, err
}

func (u *heldUpload) Reader() io.Reader { return u.buf.Reader() }

// Close removes the spool file and gives back the budgets. It is called twice: by Encode (the
// encoder goroutine) once the file was sent upstream, and by the handler's defer on every path; the
// first does the work, a concurrent second waits for it.
func (u *heldUpload) Close() error {
	if u == nil {
		return nil
	}
	u.once.Do(func() {
		u.stop()
		u.err = u.buf.Close()
		u.s.bodies.give(u.h, u.mem)
		u.s.spills.give(u.h, u.buf.Reserved())
	})
	return u.err
}

// holdFor is the Hold maker of one request's form: it records the hold in slot, so the handler's
// defer closes it whatever happens after (a panic inside the form's reading included). When the
// body budget has no memory to spare and there is no disk to spill to (max_spill_bytes 0, or the
// spool directory unusable), the file cannot be held at all: the budget's refusal (503) is returned.
func (s *Server) holdFor(c *gin.Context, lim config.Limits, h *holder, cut *cutReader, slot **heldUpload) func() (audioform.Hold, error) {
	return func() (audioform.Hold, error) {
		mem := int64(holdMemoryBytes)
		if declared := c.Request.ContentLength; declared >= 0 {
			mem = min(mem, declared)
		}
		refused := s.bodies.take(h, mem)
		if refused != budgetOK {
			mem = 0 // no memory to spare now: the file goes to disk from its first byte
		}
		var reserve func(int64) error
		if lim.MaxSpillBytes > 0 && s.spool != nil {
			reserve = func(n int64) error {
				if r := s.spills.take(h, n); r != budgetOK {
					return spillRefused(r)
				}
				return nil
			}
		}
		if reserve == nil && refused != budgetOK {
			return nil, &holdError{memoryRefused(refused)}
		}
		u := &heldUpload{s: s, buf: s.spool.NewBuffer(mem, reserve), h: h, mem: mem, stop: cut.arm(c.Writer)}
		*slot = u
		return u, nil
	}
}

// memoryRefused is the body budget's refusal of a held file's memory when it may not spill.
type memoryRefused budgetRefusal

func (memoryRefused) Error() string { return "body budget refused" }

// Spill refusals: the disk budget's own codes, so a caller and an operator can tell a full spool
// from a full memory budget.
var (
	errSpillBusy = apiError{http.StatusServiceUnavailable,
		"the router holds too many audio files sent before their 'model' field right now; retry shortly",
		"service_unavailable", "spill_budget_exhausted"}
	errCallerSpillBusy = apiError{http.StatusServiceUnavailable,
		"this caller's held audio files already hold its share of the router's spill budget; retry shortly",
		"service_unavailable", "caller_spill_share_exhausted"}
)

// holdRefused maps a refusal of the hold, with the reason it is counted under in
// anvil_router_body_refusals_total ("" when it is not counted); ok is false when err is not one.
func holdRefused(err error) (e apiError, reason string, ok bool) {
	var he *holdError
	if !errors.As(err, &he) {
		return apiError{}, "", false
	}
	var sr spillRefused
	var mr memoryRefused
	switch {
	case errors.As(err, &sr) && budgetRefusal(sr) == budgetCallerShare:
		return errCallerSpillBusy, bodyRefusedSpillShare, true
	case errors.As(err, &sr):
		return errSpillBusy, bodyRefusedSpill, true
	case errors.As(err, &mr) && budgetRefusal(mr) == budgetCallerShare:
		return errCallerBusy, bodyRefusedShare, true
	case errors.As(err, &mr):
		return errBusy, bodyRefusedBudget, true
	case errors.Is(err, spool.ErrSpillOff):
		return errHeldTooLarge, "", true
	case errors.Is(err, spool.ErrClosed):
		return errShuttingDown, "", true
	}
	return errInternal, "", true // the disk failed: logged by formRefused
}

// cutReader is an audio body that, once a file is being held, ends when the request's context ends
// (a shutdown's cut): the held upload answers at once instead of waiting for its connection to be
// dropped. Before arm it only passes reads through, so a form with its model first reads as before.
type cutReader struct {
	r   io.Reader
	ctx context.Context
	on  bool
}

func (r *cutReader) Read(p []byte) (int, error) {
	if r.on && r.ctx.Err() != nil {
		return 0, context.Cause(r.ctx)
	}
	n, err := r.r.Read(p)
	if err != nil && r.on && r.ctx.Err() != nil {
		return n, context.Cause(r.ctx)
	}
	return n, err
}

// arm starts cutting: the read under way when the context ends is woken by an expired read deadline
// (if the upload rule re-arms its own deadline in between, the read ends when the shutdown drops the
// connection instead). It returns the function that stops the wake-up.
func (r *cutReader) arm(w http.ResponseWriter) func() bool {
	r.on = true
	return context.AfterFunc(r.ctx, func() { _ = http.NewResponseController(w).SetReadDeadline(time.Now()) })
}

// openSpool opens the spool directory (Options.SpoolDir, else spool.DefaultPath) and sweeps it. A
// directory that cannot be used turns spilling off, logged: held files then stay within memory.
func (s *Server) openSpool() {
	path := s.opts.SpoolDir
	if path == "" {
		path = spool.DefaultPath()
	}
	d, removed, err := spool.Open(path)
	if len(removed) > 0 {
		s.log.Warn("stale spool files removed", "count", len(removed), "dir", path)
	}
	if err != nil && d == nil {
		s.log.Error("spool directory unusable; audio files sent before their model are held in memory only", "dir", path, "error", err)
		return
	}
	if err != nil {
		s.log.Warn("stale spool files not all removed", "dir", path, "error", err)
	}
	s.spool = d
}
