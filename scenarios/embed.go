package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"strings"
)

// files holds the scenarios shipped with Anvil, compiled in by the go:embed directive; it is
// read-only.
//
//go:embed *.yaml
var files embed.FS

// ErrUnknown is returned by Lookup for a name with no embedded scenario.
var ErrUnknown = errors.New("unknown scenario")

// Names lists the embedded scenarios, sorted.
func Names() []string {
	entries, err := files.ReadDir(".")
	if err != nil {
		return nil // unreachable: the directory is embedded
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	return names // ReadDir sorts by file name
}

// Source returns the embedded YAML of the named scenario.
func Source(name string) ([]byte, error) {
	for _, n := range Names() {
		if n == name {
			return files.ReadFile(n + ".yaml")
		}
	}
	if len(name) > 64 {
		name = name[:64] + "..."
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
}

// Lookup parses the named embedded scenario.
func Lookup(name string) (*Scenario, error) {
	data, err := Source(name)
	if err != nil {
		return nil, err
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("embedded %s.yaml: %w", name, err)
	}
	return s, nil
}
