package yamlschema

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"

	"go.yaml.in/yaml/v3"
)

// Problem is why a document was refused: Msg is a fixed sentence, Path the offending node's dotted
// path. Path is "" for the document as a whole and for the top-level node itself; problems with
// the top-level mapping's content (an unknown key, a merge key) are at "document".
type Problem struct {
	Path string
	Msg  string
}

func problem(path, msg string) *Problem { return &Problem{Path: path, Msg: msg} }

var syntaxLine = regexp.MustCompile(`line (\d+)`)

// Document parses data, at most maxBytes long, as exactly one YAML document whose top node is a
// mapping, and returns that mapping for Check. Its problems all have an empty Path.
func Document(data []byte, maxBytes int) (top *yaml.Node, p *Problem) {
	if len(data) > maxBytes {
		return nil, problem("", fmt.Sprintf("document exceeds %d bytes", maxBytes))
	}
	defer func() {
		// yaml.v3 has panicked on hostile input in past releases; a parser of outside input must
		// return a problem, never crash its caller.
		if r := recover(); r != nil {
			top, p = nil, problem("", "invalid YAML syntax")
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, problem("", "empty document")
		}
		return nil, syntaxProblem(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxProblem(err)
	default:
		return nil, problem("", "multiple YAML documents are not supported")
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, problem("", "document must be a mapping")
	}
	return doc.Content[0], nil
}

// syntaxProblem keeps only the line number of a yaml.v3 error: its text can quote pieces of the
// document, which may be secrets.
func syntaxProblem(err error) *Problem {
	if m := syntaxLine.FindStringSubmatch(err.Error()); m != nil {
		return problem("", "invalid YAML syntax on line "+m[1])
	}
	return problem("", "invalid YAML syntax")
}
