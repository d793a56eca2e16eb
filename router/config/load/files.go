package load

import (
	"github.com/anvil-llm/anvil/internal/regfile"
	"github.com/anvil-llm/anvil/router/config"
)

// ReadTokenFile is the ReadFile File uses: it refuses anything but a regular file (a FIFO or device
// would block or never end) and reads at most config.MaxTokenFileBytes+1 bytes so an oversized file is
// detected, not swallowed.
func ReadTokenFile(name string) ([]byte, error) {
	return regfile.Read(name, config.MaxTokenFileBytes)
}
