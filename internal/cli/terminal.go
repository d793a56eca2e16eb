package cli

import (
	"os"

	"golang.org/x/term"
)

// IsTerminal reports whether w is an *os.File open on a terminal: a progress bar or a prompt is for
// a person, never for a pipe, a file or another character device such as /dev/null. It asks the
// terminal driver (x/term's termios query, which only a tty answers, on every Unix and on Windows)
// rather than trusting the file mode.
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}
