// Package profile holds the named engine profiles (the fake vLLM's, the
// simulator's and the scenarios') as embedded YAML files and decodes
// operator-supplied profile files strictly:
// unknown keys, wrong types, missing fields and out-of-range values are
// errors naming the field.
//
// A profile file is one flat YAML mapping whose keys are vLLM's own names:
//
//	name: 8b-h100              # 1-64 chars [a-z0-9._-]
//	step_base: 5.75ms          # Go duration strings
//	prefill_per_token: 17us
//	decode_per_seq: 6us
//	context_per_token: 40ns
//	jitter: 0                  # optional, 0-0.5, default 0 (off)
//	max_num_seqs: 256
//	max_num_batched_tokens: 8192
//	max_model_len: 131072      # optional, default the KV capacity
//	num_gpu_blocks: 29205      # including vLLM's null block
//	block_size: 16
package profile

import (
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/anvil-llm/anvil/engine"
)

// files holds one YAML file per profile name, compiled in by the go:embed
// directive below; it is read-only.
//
//go:embed profiles/*.yaml
var files embed.FS

// Default is the name of the profile used when none is given.
const Default = "8b-h100"

// ErrUnknown is returned by Lookup for a name with no embedded profile.
var ErrUnknown = errors.New("unknown profile")

// Names lists the embedded profiles, sorted.
func Names() []string {
	entries, err := files.ReadDir("profiles")
	if err != nil {
		return nil // unreachable: the directory is embedded
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	return names // ReadDir sorts by file name
}

// Lookup returns the embedded profile called name.
func Lookup(name string) (engine.Profile, error) {
	for _, n := range Names() {
		if n != name {
			continue
		}
		data, err := files.ReadFile("profiles/" + n + ".yaml")
		if err != nil {
			return engine.Profile{}, err
		}
		return Parse(data)
	}
	if len(name) > engine.MaxNameLen {
		name = name[:engine.MaxNameLen] + "..."
	}
	return engine.Profile{}, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
}
