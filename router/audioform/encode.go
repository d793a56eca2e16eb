package audioform

import (
	"errors"
	"io"
	"mime/multipart"
	"net/textproto"
)

// copyBufferBytes is the one buffer a file part streams through.
const copyBufferBytes = 32 << 10

// Encode writes the form to w as a canonical multipart/form-data body (ContentType names its
// boundary) with the model field's value replaced by model: the head from memory, then the file part
// and every later part as they are read from the body (or, for a held file, every field and then the
// file from its Hold). Before the closing boundary it reads the body
// to its end (an epilogue is discarded), so a receiver holding the complete form knows the caller's
// upload is over and Encode will read no more. It returns nil once the closing boundary is written.
// On any other return the closing boundary was never written: a read failure (a refusal: this
// package's sentinels or the body's own error) or w's write error, returned as is.
func (f *Form) Encode(w io.Writer, model string) error {
	mw := multipart.NewWriter(w)
	if err := mw.SetBoundary(f.boundary); err != nil {
		return err
	}
	for _, fl := range f.head {
		value := fl.value
		if fl.name == ModelField {
			value = []byte(model)
		}
		pw, err := mw.CreatePart(header(fl.name, fl.fileName, fl.contentType))
		if err != nil {
			return err
		}
		if _, err := pw.Write(value); err != nil {
			return err
		}
	}
	switch {
	case f.held != nil:
		if err := f.writeHeld(mw); err != nil {
			return err
		}
	case f.file != nil:
		if err := f.streamRest(mw); err != nil {
			return err
		}
	}
	if _, err := io.Copy(io.Discard, f.body); err != nil {
		return f.readError(err)
	}
	return mw.Close()
}

// streamRest copies the file part and every part after it. Past the head the router holds nothing,
// so it refuses here what it cannot let through: a second model or file part, and every refusal of
// next (framing, header bound, part count, names).
func (f *Form) streamRest(mw *multipart.Writer) error {
	buf := make([]byte, copyBufferBytes)
	p := f.file
	for {
		contentType := ""
		if p.FileName() != "" {
			contentType = partType(p)
		}
		pw, err := mw.CreatePart(header(p.FormName(), p.FileName(), contentType))
		if err != nil {
			return err
		}
		if err := f.copyPart(pw, p, buf); err != nil {
			return err
		}
		p, err = f.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch p.FormName() {
		case ModelField:
			return ErrDuplicateModel
		case FileField:
			return ErrDuplicateFile
		}
	}
}

// copyPart copies one part through buf, telling its read failures (refusals) from w's.
func (f *Form) copyPart(w io.Writer, p *multipart.Part, buf []byte) error {
	for {
		n, err := p.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return f.readError(err)
		}
	}
}

// header is the canonical header of a part: names are plain (checkPart), so they go between quotes
// unescaped and every parser reads them back the same.
func header(name, fileName, contentType string) textproto.MIMEHeader {
	cd := `form-data; name="` + name + `"`
	if fileName != "" {
		cd += `; filename="` + fileName + `"`
	}
	h := textproto.MIMEHeader{"Content-Disposition": {cd}}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return h
}
