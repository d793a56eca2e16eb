package audioform

import (
	"errors"
	"fmt"
	"io"
	"mime/multipart"
)

// ErrHeldRead wraps a failure to read back a held file part while Encode sends it: the router's own
// failure (its disk, its spool closed by a shutdown), never the caller's. The Hold's error is wrapped
// too, for errors.Is.
var ErrHeldRead = errors.New("audioform: the held file part could not be read back")

// heldReader tells the Hold's read failures from the upstream's write failures in writeHeld.
type heldReader struct{ r io.Reader }

func (h heldReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: %w", ErrHeldRead, err)
	}
	return n, err
}

// Hold keeps the bytes of a file part that came before the model field until the model is known.
// Its Write may refuse (a bound, a full disk); the refusal is returned from OpenHolding as it is.
type Hold interface {
	io.Writer
	// Reader reads what was written, from the start; nothing is written once it is called.
	Reader() io.Reader
	// Close frees what the hold keeps (memory, a temporary file); safe to call again, also from
	// another goroutine: Encode closes the Hold as soon as its bytes are written, while the response
	// may still be under way, and the Form's owner closes it again at the end.
	Close() error
}

// OpenHolding is Open for a form that may send its file part before its model field. Such a file
// part is read whole into a Hold from newHold, then the rest of the form to its closing boundary:
// every other part is a field held within Limits, a second file part is ErrDuplicateFile and a form
// that ends without a model is ErrMissingModel. A form with its model first is read exactly as Open
// reads it, holding nothing. The caller closes the Form (Close) once it is done with it; on a
// refusal OpenHolding closes the Hold itself.
func OpenHolding(body io.Reader, contentType string, lim Limits, newHold func() (Hold, error)) (*Form, error) {
	return open(body, contentType, lim, newHold)
}

// hold reads the file part p whole into a new Hold.
func (f *Form) hold(p *multipart.Part, newHold func() (Hold, error)) error {
	h, err := newHold()
	if err != nil {
		return err
	}
	f.held = h
	f.heldPart = field{name: FileField, fileName: p.FileName()}
	if f.heldPart.fileName != "" {
		f.heldPart.contentType = partType(p)
	}
	return f.copyPart(h, p, make([]byte, copyBufferBytes))
}

// writeHeld writes the held file part, after every field, then closes the Hold: its bytes are with
// the upstream, so what holds them (memory of the body budget, disk) is freed at once rather than
// for as long as the upstream takes to answer. Before the closing boundary, so a receiver holding
// the complete form knows the Hold is closed. A failure to close is not the upload's: Close reports
// its own.
func (f *Form) writeHeld(mw *multipart.Writer) error {
	pw, err := mw.CreatePart(header(f.heldPart.name, f.heldPart.fileName, f.heldPart.contentType))
	if err != nil {
		return err
	}
	_, err = io.Copy(pw, heldReader{f.held.Reader()})
	if err != nil {
		return err
	}
	_ = f.held.Close()
	return nil
}

// Held reports whether the file part came before the model field and is held.
func (f *Form) Held() bool { return f.held != nil }

// Close frees the held file part, if any. A form opened by Open holds nothing; Close is then a no-op.
func (f *Form) Close() error {
	if f.held == nil {
		return nil
	}
	return f.held.Close()
}
