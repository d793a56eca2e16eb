package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether w is an *os.File open on a terminal: a progress bar or a prompt is for
// a person, never for a pipe, a file or another character device such as /dev/null. It asks the
// terminal driver (the TCGETS ioctl, which only a tty answers) rather than trusting the file mode.
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
