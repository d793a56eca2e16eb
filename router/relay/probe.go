package relay

import (
	"bytes"

	"github.com/anvil-llm/anvil/internal/jsonscan"
)

// eventKind is what an event's top-level "type" says about the stream.
type eventKind uint8

const (
	kindOther    eventKind = iota // no type, or one the relay does not act on
	kindError                     // "error": an in-band upstream error
	kindFailed                    // "response.failed": an error that also ends a Responses stream
	kindTerminal                  // the last event of a complete Responses or audio stream
)

// typeKind classifies a decoded "type" value.
func typeKind(typ []byte) eventKind {
	switch string(typ) {
	case "error":
		return kindError
	case "response.failed":
		return kindFailed
	case "response.completed", "response.incomplete",
		// OpenAI's audio streams end with these events and no [DONE] (vLLM's transcription streams end
		// with [DONE], which inspect handles before the probe).
		"transcript.text.done", "speech.audio.done":
		return kindTerminal
	}
	return kindOther
}

// eventProbe reads the two top-level members of an event's data that classify it, in place and without
// allocating, deciding exactly as json.Unmarshal into struct{Error json.RawMessage `json:"error"`;
// Type string `json:"type"`} did before it (a differential fuzz test holds it to that):
//
//   - a key matches a field when its decoded form equals the field's name case-insensitively
//     (encoding/json's fold; no non-ASCII rune folds to a letter of "error" or "type");
//   - every matching member overwrites the one before: the last "error" decides whether an error is
//     set (any value but null), the last string "type" is the type;
//   - a "type" member whose value is null or not a string leaves the type as it was (Unmarshal's type
//     mismatch is not an error to the relay);
//   - data that is not an object sets neither.
//
// The data must be valid JSON (inspect checks it first).
type eventProbe struct {
	doc     []byte
	errored bool      // the last "error" member's value is not null
	kind    eventKind // what the last string "type" member says
}

// read walks doc's top-level members.
func (p *eventProbe) read(doc []byte) {
	p.doc = doc
	i := jsonscan.SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return
	}
	_, _ = jsonscan.EachMember(doc, i, 0, p.member) // valid JSON: no error
}

func (p *eventProbe) member(m jsonscan.Member) (int, error) {
	var buf [24]byte // longer than every name and type the probe compares against
	// A key gets 8 bytes, capacity included (DecodeSmall bounds by cap): a longer decoded key folds to
	// neither "error" nor "type", so decoding further would be wasted work.
	key, ok := jsonscan.DecodeSmall(m.Key, m.Flags, buf[:8:8])
	switch {
	case !ok:
	case bytes.EqualFold(key, []byte("error")):
		end, err := jsonscan.Skip(p.doc, m.Value, 1)
		p.errored = string(p.doc[m.Value:end]) != "null"
		return end, err
	case bytes.EqualFold(key, []byte("type")) && p.doc[m.Value] == '"':
		end, flags, err := jsonscan.String(p.doc, m.Value)
		if err != nil {
			return end, err
		}
		p.kind = kindOther // a type too long to decode here is none the relay knows
		if typ, ok := jsonscan.DecodeSmall(p.doc[m.Value+1:end-1], flags, buf[:]); ok {
			p.kind = typeKind(typ)
		}
		return end, nil
	}
	return jsonscan.Skip(p.doc, m.Value, 1)
}
