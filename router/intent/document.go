// Package intent persists operator quiesce intent, tier and member, so a router restarted during
// maintenance comes back with the same scopes quiesced.
//
// The document is one JSON object:
//
//	{"tiers": {"TIER": "REASON"}, "members": {"TIER": {"MEMBER": "REASON"}}}
//
// "tiers" maps each quiesced tier to its reason code; the optional "members" maps a replica tier to
// its quiesced members and their reason codes. A document without member intent is written without a
// "members" key, so tier-only documents keep the exact bytes of the tier-only form.
//
// Decode validates the whole document before anything uses it: exact objects, the contract's ID and
// reason grammars (router/ident), no nulls, lists, numbers or nested objects where a reason belongs,
// duplicate keys refused, at most ident.MaxDocumentBytes. Restore applies a decoded document to
// admission and reports the valid entries for tiers and members that are not configured; Kept
// keeps those (bounded) so that a save writes them again and a later configuration that has their
// scope gets them back. Store owns the file: one read at start, then writes serialized by one lock, each an
// exclusive temporary file in the same directory, synced, renamed over the file and followed by a
// directory sync, so a failed write leaves the previous file intact. The file system is an interface
// (FS): the server uses the operating system's (OS), the simulator an in-memory one.
package intent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"

	"github.com/anvil-llm/anvil/router/ident"
)

// Document is the persisted intent: reasons by quiesced tier, and by quiesced member per tier.
type Document struct {
	Tiers   map[string]string            // tier ID -> reason code
	Members map[string]map[string]string // tier ID -> member ID -> reason code
}

// Empty reports whether the document holds no intent at all.
func (d Document) Empty() bool {
	for _, ms := range d.Members {
		if len(ms) > 0 {
			return false
		}
	}
	return len(d.Tiers) == 0
}

// Clone returns a deep copy.
func (d Document) Clone() Document {
	out := Document{Tiers: maps.Clone(d.Tiers)}
	if d.Members != nil {
		out.Members = make(map[string]map[string]string, len(d.Members))
		for t, ms := range d.Members {
			out.Members[t] = maps.Clone(ms)
		}
	}
	return out
}

// ErrInvalid is wrapped by every refusal of an intent document; the detail is a fixed problem text
// and the byte offset where it was found, never a piece of the document.
var ErrInvalid = errors.New("invalid intent document")

// Fixed problems of Decode.
var (
	errTooLarge    = problem("larger than 1 MiB")
	errNotObject   = problem("not one JSON object")
	errSyntax      = problem("malformed JSON")
	errTrailing    = problem("data after the JSON object")
	errUnknownKey  = problem(`unknown key (allowed: "tiers", "members")`)
	errDuplicate   = problem("a key appears twice in one object")
	errNull        = problem("null where an object or a reason code belongs")
	errNotMap      = problem("a list, number, string or boolean where an object belongs")
	errNotReason   = problem("an object, list, number or boolean where a reason code belongs")
	errTierID      = problem("a tier key is not a valid tier ID")
	errMemberID    = problem("a member key is not a valid member ID")
	errReason      = problem("a reason is not a valid reason code (1-64 characters [a-z0-9._-])")
	errEmptyObject = problem("the document is empty (want an object)")
)

func problem(text string) error { return fmt.Errorf("%w: %s", ErrInvalid, text) }

// at wraps a fixed problem with the byte offset where the decoder found it.
func at(err error, dec *json.Decoder) error {
	return fmt.Errorf("%w (at byte %d)", err, dec.InputOffset())
}

// Decode reads an intent document strictly. It never panics and never echoes the document.
func Decode(data []byte) (Document, error) {
	if len(data) > ident.MaxDocumentBytes {
		return Document{}, errTooLarge
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Document{}, errEmptyObject
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var doc Document
	if err := openObject(dec, errNotObject); err != nil {
		return Document{}, err
	}
	seen := map[string]bool{}
	for dec.More() {
		key, err := objectKey(dec, seen)
		if err != nil {
			return Document{}, err
		}
		switch key {
		case "tiers":
			doc.Tiers, err = reasons(dec, errTierID)
		case "members":
			doc.Members, err = members(dec)
		default:
			return Document{}, at(errUnknownKey, dec)
		}
		if err != nil {
			return Document{}, err
		}
	}
	if err := closeObject(dec); err != nil {
		return Document{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Document{}, at(errTrailing, dec)
	}
	return doc, nil
}

// members reads {"TIER": {"MEMBER": "REASON"}}.
func members(dec *json.Decoder) (map[string]map[string]string, error) {
	if err := openObject(dec, errNotMap); err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	seen := map[string]bool{}
	for dec.More() {
		tier, err := objectKey(dec, seen)
		if err != nil {
			return nil, err
		}
		if !ident.ValidID(tier) {
			return nil, at(errTierID, dec)
		}
		if out[tier], err = reasons(dec, errMemberID); err != nil {
			return nil, err
		}
	}
	return out, closeObject(dec)
}

// reasons reads {"ID": "REASON"}, refusing keys outside the ID grammar with badKey.
func reasons(dec *json.Decoder, badKey error) (map[string]string, error) {
	if err := openObject(dec, errNotMap); err != nil {
		return nil, err
	}
	out := map[string]string{}
	seen := map[string]bool{}
	for dec.More() {
		id, err := objectKey(dec, seen)
		if err != nil {
			return nil, err
		}
		if !ident.ValidID(id) {
			return nil, at(badKey, dec)
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, at(errSyntax, dec)
		}
		reason, ok := tok.(string)
		switch {
		case tok == nil:
			return nil, at(errNull, dec)
		case !ok:
			return nil, at(errNotReason, dec)
		case !ident.ValidReason(reason):
			return nil, at(errReason, dec)
		}
		out[id] = reason
	}
	return out, closeObject(dec)
}

// openObject consumes a '{', refusing null and any other value with notObject.
func openObject(dec *json.Decoder, notObject error) error {
	tok, err := dec.Token()
	switch {
	case err != nil:
		return at(errSyntax, dec)
	case tok == nil:
		return at(errNull, dec)
	case tok != json.Delim('{'):
		return at(notObject, dec)
	}
	return nil
}

// objectKey reads one key of an open object and refuses a repeated one.
func objectKey(dec *json.Decoder, seen map[string]bool) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", at(errSyntax, dec)
	}
	key, ok := tok.(string)
	if !ok {
		return "", at(errSyntax, dec)
	}
	if seen[key] {
		return "", at(errDuplicate, dec)
	}
	seen[key] = true
	return key, nil
}

func closeObject(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('}') {
		return at(errSyntax, dec)
	}
	return nil
}

// wire is the document's serialized form: "tiers" always, "members" only when some member is
// quiesced. encoding/json writes map keys sorted, so equal documents encode to equal bytes.
type wire struct {
	Tiers   map[string]string            `json:"tiers"`
	Members map[string]map[string]string `json:"members,omitempty"`
}

// Encode returns the canonical bytes of d: indented JSON with sorted keys and a final newline.
// Tiers without quiesced members are left out of "members", and "members" is left out entirely
// when no member is quiesced.
func Encode(d Document) []byte {
	w := wire{Tiers: d.Tiers}
	if w.Tiers == nil {
		w.Tiers = map[string]string{}
	}
	for t, ms := range d.Members {
		if len(ms) == 0 {
			continue
		}
		if w.Members == nil {
			w.Members = map[string]map[string]string{}
		}
		w.Members[t] = ms
	}
	out, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return append(out, '\n')
}
