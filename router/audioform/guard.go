package audioform

import (
	"errors"
	"io"
)

// errHeaderTooLarge stops the reader inside a part header over MaxHeaderBytes; it surfaces as
// ErrMalformed.
var errHeaderTooLarge = errors.New("audioform: part header too large")

// guard is the form's body as the multipart reader reads it. While armed (during NextPart: a
// boundary line and a part's headers) it lets at most a budget of bytes through, so one huge header
// cannot grow the reader's memory; and it remembers the body's own first failure, so that a bound or
// a departed client is reported as itself, not as a malformed form.
type guard struct {
	r      io.Reader
	armed  bool
	budget int64
	err    error // the body's first error other than io.EOF
}

func (g *guard) arm(budget int64) { g.armed, g.budget = true, budget }
func (g *guard) disarm()          { g.armed = false }

func (g *guard) Read(p []byte) (int, error) {
	if g.armed {
		if g.budget <= 0 {
			return 0, errHeaderTooLarge
		}
		if int64(len(p)) > g.budget {
			p = p[:g.budget]
		}
	}
	n, err := g.r.Read(p)
	if g.armed {
		g.budget -= int64(n)
	}
	if err != nil && !errors.Is(err, io.EOF) && g.err == nil {
		g.err = err
	}
	return n, err
}

func (g *guard) failure() error { return g.err }
