package decisionlog

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/anvil-llm/anvil/router/ident"
)

// MaxReadRecords bounds ReadJSONL's record limit.
const MaxReadRecords = 1_000_000

// ReadJSONL strictly ingests captured decision JSONL, as written by a Log's sink, and
// returns at most maxRecords records (1..MaxReadRecords; more is an error, never a
// silent truncation).
//
// It accepts exactly the writer's output: every line at most ident.MaxLineBytes and
// newline-terminated, one object per line with the closed key set (queued_ns,
// ejected_members, config_digest, caller_request_id, caller, trace_id and replica_scheduler optional), no
// duplicate or unknown keys, exact JSON types (integers without fraction
// or exponent), defined enum spellings, lists of at most 16 items, IDs in their
// grammars, record invariants, and evidence reconstituted through the scheduler's
// constructors and consistent with its record. Finally the line must be byte-identical
// to the writer's encoding of what was read, so anything accepted round-trips exactly.
//
// Input errors are *LineError values with a fixed message; a bad limit is ErrLimit.
// Empty input yields no records and no error.
func ReadJSONL(r io.Reader, maxRecords int) ([]Record, error) {
	if maxRecords < 1 || maxRecords > MaxReadRecords {
		return nil, ErrLimit
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var out []Record
	for n := 1; ; n++ {
		line, err := readLine(br, ident.MaxLineBytes)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, lineErrorWithCause(n, err)
		}
		if len(out) == maxRecords {
			return nil, &LineError{Line: n, Err: ErrTooManyRecords}
		}
		rec, err := parseLine(line)
		if err != nil {
			return nil, lineError(n, err)
		}
		out = append(out, rec)
	}
}

// ReadJSONLTolerant reads a capture cut short (by a crash or a full disk) line by line through the same
// strict rules as ReadJSONL, keeping every valid record and skipping the rest: a malformed line, a line
// over ident.MaxLineBytes (skipped without being buffered whole) or a last line without its newline.
// It returns at most maxRecords records (1..MaxReadRecords, reading stops there), how many lines it
// skipped and the first skip's *LineError (nil when none was skipped). A read failure of r ends the
// read and is reported as the first error when nothing was skipped before it.
func ReadJSONLTolerant(r io.Reader, maxRecords int) ([]Record, int, error) {
	if maxRecords < 1 || maxRecords > MaxReadRecords {
		return nil, 0, ErrLimit
	}
	br := bufio.NewReaderSize(r, ident.MaxLineBytes+2)
	var out []Record
	skipped := 0
	var first error
	skip := func(err *LineError) {
		skipped++
		if first == nil {
			first = err
		}
	}
	for n := 1; len(out) < maxRecords; n++ {
		// The buffer holds a longest valid line and its newline plus one byte: a line that does not
		// fit is too long and is skipped without being held.
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			skip(&LineError{Line: n, Err: ErrLineTooLong})
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return out, skipped, first
			}
			continue
		}
		switch {
		case len(line) == 0:
		case line[len(line)-1] != '\n':
			skip(&LineError{Line: n, Err: ErrMissingNewline})
		case len(line)-1 > ident.MaxLineBytes:
			skip(&LineError{Line: n, Err: ErrLineTooLong})
		default:
			if rec, perr := parseLine(line[:len(line)-1]); perr != nil {
				skip(lineError(n, perr))
			} else {
				out = append(out, rec)
			}
		}
		if err != nil {
			if err != io.EOF && first == nil {
				first = lineErrorWithCause(n, &readError{err})
			}
			return out, skipped, first
		}
	}
	return out, skipped, first
}

// readLine returns the next line without its newline, reading at most limit+1 bytes of
// it. io.EOF means no further line.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > limit+1 {
			return nil, ErrLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) == 0:
			return nil, io.EOF
		case err == io.EOF:
			return nil, ErrMissingNewline
		default:
			return nil, &readError{err}
		}
	}
}

// readError carries the reader's failure to lineErrorWithCause.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }

func lineErrorWithCause(n int, err error) *LineError {
	var re *readError
	if errors.As(err, &re) {
		return &LineError{Line: n, Err: ErrRead, cause: re.err}
	}
	return &LineError{Line: n, Err: err}
}

// parseLine decodes and validates one line (without its newline). The canonical fast
// path handles the lines the writer produces; everything else, and every error, comes
// from the token-level decoder.
func parseLine(line []byte) (Record, error) {
	if len(line) == 0 {
		return Record{}, ErrEmptyLine
	}
	if r, ok := scanCanonical(line); ok && checkParsed(&r, line) == nil {
		return r, nil
	}
	r, err := decodeRecord(line)
	if err != nil {
		return Record{}, err
	}
	if err := checkParsed(&r, line); err != nil {
		return Record{}, err
	}
	return r, nil
}

// checkParsed applies the record rules to a decoded line and requires the line to be
// exactly the writer's encoding of the result.
func checkParsed(r *Record, line []byte) error {
	if err := checkIDs(r); err != nil {
		return err
	}
	if err := checkFields(r); err != nil {
		return err
	}
	if r.ReplicaScheduler != nil {
		if err := evidenceFits(r, *r.ReplicaScheduler); err != nil {
			return err
		}
	}
	if !bytes.Equal(appendJSON(make([]byte, 0, len(line)), r), line) {
		return ErrNotCanonical
	}
	return nil
}
