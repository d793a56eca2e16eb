package server

import (
	"errors"
	"fmt"
	"os"

	"github.com/anvil-llm/anvil/internal/regfile"
)

// ErrNotRegular refuses a path the server opens (the decision log's JSONL file, the TLS certificate
// and key) that holds something other than a regular file: a FIFO would block the open (or the
// read) forever, a device never ends.
var ErrNotRegular = regfile.ErrNotRegular

// maxCertFileBytes bounds a TLS certificate or key file, as the config watcher reads it.
const maxCertFileBytes = 1 << 20

// openAppend opens the decision log's JSONL file for appending, creating it when absent. A link is
// followed (the file is only ever appended to, never replaced), but what it ends at must be a
// regular file: a FIFO would block the start in open.
func openAppend(path string) (*os.File, error) {
	f, err := regfile.Open(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	return f, named(path, err)
}

// readRegular reads a regular file of at most limit bytes.
func readRegular(name string, limit int64) ([]byte, error) {
	data, err := regfile.Read(name, limit)
	err = named(name, err)
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return data, err
}

// named puts the path before a refusal of what is there, as every message of the server's files
// reads: "PATH: not a regular file".
func named(name string, err error) error {
	if errors.Is(err, ErrNotRegular) {
		return fmt.Errorf("%s: %w", name, err)
	}
	return err
}
