package decisionlog

import (
	"errors"
	"strconv"
)

// Operation errors.
var (
	// ErrInvalidRecord: Log.Add refused a record that breaks an invariant on Record.
	ErrInvalidRecord = errors.New("decisionlog: invalid record")
	// ErrInvalidEvidence: ValidateEvidence found evidence that does not fit the
	// configured membership, or New got a malformed membership option.
	ErrInvalidEvidence = errors.New("decisionlog: invalid scheduler evidence")
	// ErrConfig: New got a ring size or line bound outside its range.
	ErrConfig = errors.New("decisionlog: invalid log configuration")
	// ErrLimit: ReadJSONL got a record limit outside 1..MaxReadRecords.
	ErrLimit = errors.New("decisionlog: record limit out of range")
)

// Field and line errors. Messages are fixed: they name known fields and line numbers
// but never echo input bytes.
var (
	ErrInvalidValue   = errors.New("invalid value")
	ErrInconsistent   = errors.New("inconsistent with other fields")
	ErrLineTooLong    = errors.New("line too long")
	ErrEmptyLine      = errors.New("empty line")
	ErrMissingNewline = errors.New("missing final newline")
	ErrSyntax         = errors.New("malformed json")
	ErrTrailingData   = errors.New("data after the json object")
	ErrUnknownField   = errors.New("unknown field")
	ErrDuplicateField = errors.New("duplicate field")
	ErrMissingField   = errors.New("missing field")
	ErrWrongType      = errors.New("wrong type")
	ErrTooManyItems   = errors.New("too many items")
	ErrNotCanonical   = errors.New("not in canonical form")
	ErrTooManyRecords = errors.New("too many records")
	ErrRead           = errors.New("read failed")
)

// fieldError is a fixed-message failure of one known field (a JSON path).
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string {
	if e.field == "" {
		return e.err.Error()
	}
	return e.field + ": " + e.err.Error()
}
func (e *fieldError) Unwrap() error { return e.err }

// LineError is every ReadJSONL failure tied to input: the 1-based line, the JSON path
// of the offending known field ("" for the whole line) and one of the sentinel errors
// above. Unknown field names and input values are never echoed.
type LineError struct {
	Line  int
	Field string
	Err   error
	cause error // the reader's own error, for ErrRead only
}

func (e *LineError) Error() string {
	s := "decisionlog: line " + strconv.Itoa(e.Line) + ": "
	if e.Field != "" {
		s += e.Field + ": "
	}
	s += e.Err.Error()
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

// Unwrap exposes the sentinel and, for read failures, the reader's error.
func (e *LineError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Err, e.cause}
	}
	return []error{e.Err}
}

// lineError turns a decoding failure into a LineError for line n.
func lineError(n int, err error) *LineError {
	var fe *fieldError
	if errors.As(err, &fe) {
		return &LineError{Line: n, Field: fe.field, Err: fe.err}
	}
	return &LineError{Line: n, Err: err}
}
