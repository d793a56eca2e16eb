package manage

import (
	"encoding/json"
	"slices"
	"strings"
)

// Manifest is the machine-readable contract of a command tree: every command with its flags,
// defaults and help strings. docs/CLI-COMMAND-MANIFEST.json is anvil-router's, generated from its
// cobra tree, so help text and the documented contract cannot disagree.
type Manifest struct {
	Program  string    `json:"program"`
	Commands []Command `json:"commands"`
}

// Command is one command of the tree.
type Command struct {
	Path  string `json:"path"` // "anvil-router quiesce"
	Use   string `json:"use"`
	Short string `json:"short"`
	Long  string `json:"long,omitempty"`
	Flags []Flag `json:"flags"`
}

// Flag is one flag of a command.
type Flag struct {
	Name      string `json:"name"`
	Shorthand string `json:"shorthand,omitempty"`
	Type      string `json:"type"`
	Default   string `json:"default"`
	Usage     string `json:"usage"`
}

// JSON returns the manifest's canonical bytes: commands sorted by path, flags by name, indented,
// with a final newline.
func (m Manifest) JSON() []byte {
	out := Manifest{Program: m.Program, Commands: slices.Clone(m.Commands)}
	slices.SortFunc(out.Commands, func(a, b Command) int { return strings.Compare(a.Path, b.Path) })
	for i := range out.Commands {
		c := &out.Commands[i]
		c.Flags = slices.Clone(c.Flags)
		if c.Flags == nil {
			c.Flags = []Flag{}
		}
		slices.SortFunc(c.Flags, func(a, b Flag) int { return strings.Compare(a.Name, b.Name) })
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		panic(err) // strings and slices of them always marshal
	}
	return append(b, '\n')
}
