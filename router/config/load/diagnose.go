package load

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/anvil-llm/anvil/router/config"
)

// Diagnosis is `config check`'s full reading of a file: every independent problem, not only the
// first one a load stops at. Each problem is the *config.Error a load would return (same fixed
// text); a problem that depends on an earlier one is not reported (the document is not validated
// when the YAML gate refused it, an alias is not resolved while a tier is invalid).
type Diagnosis struct {
	// Document is the decoded document, nil when the gate refused it (then there is nothing to
	// validate, and no file it names to check).
	Document *config.Document
	// Problems are the refusals in the order a load meets them.
	Problems []error

	top *yaml.Node
}

// Diagnose reads the file at path as a Source with env does (nil env: the process environment)
// and reports all its problems.
func Diagnose(path string, env func(string) (string, bool)) Diagnosis {
	s := NewSource(path, env)
	data, err := s.read(path, MaxFileBytes)
	if err != nil {
		return Diagnosis{Problems: []error{config.Unreadable(config.CannotRead("config file", path, err), err)}}
	}
	return diagnose(data, config.Sources{LookupEnv: s.env, ReadFile: func(name string) ([]byte, error) {
		return s.read(name, config.MaxTokenFileBytes)
	}})
}

// diagnose is Diagnose on a document's bytes: its first problem is ParseWith's error.
func diagnose(data []byte, src config.Sources) Diagnosis {
	top, errs := gateAll(data, true)
	d := Diagnosis{Problems: errs, top: top}
	if len(errs) > 0 {
		return d
	}
	doc, err := decode(data)
	if err != nil {
		d.Problems = append(d.Problems, err)
		return d
	}
	d.Document = &doc
	_, d.Problems = config.BuildAll(doc, src)
	return d
}

// Line is the document line of the setting a key path names (tiers[1].members[0].endpoint,
// tls.cert_file; an entry's own line for a list index), or 0 when the path names no node of the
// document (an environment variable such as ANVIL_API_TOKENS[1], the document as a whole, a key the
// document omits).
func (d Diagnosis) Line(keyPath string) int {
	n, line := d.top, 0
	if n == nil || keyPath == "" {
		return 0
	}
	for _, seg := range strings.Split(keyPath, ".") {
		key, rest, _ := strings.Cut(seg, "[")
		if n, line = child(n, key); n == nil {
			return 0
		}
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(idx)
			if !ok || err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return 0
			}
			n, line = n.Content[i], n.Content[i].Line
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return line
}

// child is the value under key in mapping n and the key's line (nil, 0 when absent).
func child(n *yaml.Node, key string) (*yaml.Node, int) {
	if n.Kind != yaml.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], n.Content[i].Line
		}
	}
	return nil, 0
}
