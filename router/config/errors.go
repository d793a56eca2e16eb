package config

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrInvalid is wrapped by every error that refuses the content of a
// configuration: its YAML, its environment overrides or the token files it
// names. Test with errors.Is(err, config.ErrInvalid).
var ErrInvalid = errors.New("invalid config")

// ErrUnreadable is wrapped when Load cannot read the configuration file
// itself (missing, not a regular file, too large). The underlying fs error,
// if any, is wrapped too.
var ErrUnreadable = errors.New("unreadable config file")

// Error is the one error type of this package. Path names the offending
// setting in the document (for example tiers[1].members[0].max_concurrency)
// or the environment variable that supplied it; Msg is a fixed sentence.
// Neither ever contains a configured value, so errors are safe to log even
// when the offending value is a secret; the one exception is the path of a
// file that cannot be read (CannotRead), never its content.
type Error struct {
	Path string
	Msg  string
	// sentinel is ErrInvalid or ErrUnreadable; cause is an optional
	// underlying error (an fs error) kept for errors.Is/As only.
	sentinel error
	cause    error
}

// Error renders "config: PATH: MSG", or "config: MSG" without a path.
func (e *Error) Error() string {
	if e.Path == "" {
		return "config: " + e.Msg
	}
	return "config: " + e.Path + ": " + e.Msg
}

// Unwrap exposes the sentinel and the optional cause to errors.Is/As.
// The cause is deliberately not part of Error(): fs errors are stable
// enough, but the fixed message is the contract.
func (e *Error) Unwrap() []error {
	if e.cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.cause}
}

func invalid(path, msg string) *Error {
	return &Error{Path: path, Msg: msg, sentinel: ErrInvalid}
}

func invalidf(path, format string, args ...any) *Error {
	return invalid(path, fmt.Sprintf(format, args...))
}

func invalidCause(path, msg string, cause error) *Error {
	return &Error{Path: path, Msg: msg, sentinel: ErrInvalid, cause: cause}
}

func unreadable(msg string, cause error) *Error {
	return &Error{Msg: msg, sentinel: ErrUnreadable, cause: cause}
}

// Invalid returns the *Error for a refused document: path names the setting ("" for the document as a
// whole) and msg is a fixed sentence that never quotes a configured value. The loader uses it for what
// it refuses before Build runs (YAML syntax, schema shape).
func Invalid(path, msg string) *Error { return invalid(path, msg) }

// Unreadable returns the *Error for a configuration file that cannot be read; cause (an fs error, or
// nil) is kept for errors.Is/As only.
func Unreadable(msg string, cause error) *Error { return unreadable(msg, cause) }

// ErrChanged is wrapped when the configuration file, or a file it names, changed while a load was
// reading it: what was read may be half of one version and half of another, so it is refused whole
// and the next attempt reads it again.
var ErrChanged = errors.New("config changed while being read")

// Changed returns the *Error for a file that changed while it was read: path is the setting that
// names the file ("" for the configuration file itself).
func Changed(path string) *Error {
	return &Error{Path: path, Msg: "file changed while being read", sentinel: ErrChanged}
}

// CannotRead is the fixed sentence for a file that cannot be read: "cannot read file NAME: REASON",
// what (for example "file" or "config file") naming the kind. It names the file and the OS's own
// reason (a *fs.PathError's error without the path it repeats), never the file's content.
func CannotRead(what, name string, err error) string {
	reason := "unknown error"
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		reason = pe.Err.Error()
	case err != nil:
		reason = err.Error()
	}
	return "cannot read " + what + " " + name + ": " + reason
}
