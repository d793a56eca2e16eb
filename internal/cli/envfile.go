package cli

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
)

// ErrEnvFile is wrapped by every refusal of an environment file; the error names the line, never
// its value (a value is often a secret).
var ErrEnvFile = errors.New("invalid environment file")

// MaxEnvFileBytes bounds an environment file.
const MaxEnvFileBytes = 1 << 20

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseEnvFile reads an environment file in the format docker's and podman's --env-file take (and
// systemd's EnvironmentFile= reads the same way for values without quotes, backslashes or
// surrounding blanks): one NAME=VALUE a line, the value taken literally to the end of the line, a
// trailing carriage return dropped; blank lines and lines starting with # are skipped. A line
// without '=', a name outside [A-Za-z_][A-Za-z0-9_]* and a name given twice are refused with the
// line number.
func ParseEnvFile(data []byte) (map[string]string, error) {
	if len(data) > MaxEnvFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrEnvFile, MaxEnvFileBytes)
	}
	out := map[string]string{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		name, value, ok := bytes.Cut(line, []byte("="))
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: line %d: not NAME=VALUE", ErrEnvFile, i+1)
		case !envName.Match(name):
			return nil, fmt.Errorf("%w: line %d: the name must be [A-Za-z_][A-Za-z0-9_]*", ErrEnvFile, i+1)
		}
		if _, dup := out[string(name)]; dup {
			return nil, fmt.Errorf("%w: line %d: %s is set twice", ErrEnvFile, i+1, name)
		}
		out[string(name)] = string(value)
	}
	return out, nil
}
