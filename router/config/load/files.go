package load

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/anvil-llm/anvil/router/config"
)

var errNotRegular = errors.New("not a regular file")

// ReadTokenFile is the ReadFile File uses: it refuses anything but a regular file (a FIFO or device
// would block or never end) and reads at most config.MaxTokenFileBytes+1 bytes so an oversized file is
// detected, not swallowed.
func ReadTokenFile(name string) ([]byte, error) {
	return readRegular(name, config.MaxTokenFileBytes)
}

// readRegular opens without blocking (opening a FIFO for reading would otherwise wait for a writer)
// and refuses anything but a regular file, checked on the open descriptor so a swapped path cannot
// slip through.
func readRegular(name string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, errNotRegular
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}
