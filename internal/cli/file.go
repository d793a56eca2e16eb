package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is ReadAtMost's refusal of an input over its limit.
var ErrTooLarge = errors.New("larger than the limit")

// ReadAtMost reads r to its end, refusing with ErrTooLarge once it holds more than limit bytes
// (reading at most limit+1 of them).
func ReadAtMost(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, ErrTooLarge
	}
	return data, nil
}

// ReadBounded reads a file of at most limit bytes. A file that cannot be opened or is too large is
// the caller's input (a UsageError); a failed read is not.
func ReadBounded(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, UsageError{err}
	}
	defer fh.Close()
	data, err := ReadAtMost(fh, limit)
	if errors.Is(err, ErrTooLarge) {
		return nil, Usagef("%s is larger than %d bytes", path, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// WriteFile creates path and fills it through a buffer, reporting the first error, the flush's and
// the close's included, with the path.
func WriteFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteJSON writes v as indented JSON and a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
