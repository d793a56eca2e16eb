package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Fixed reasons of strict decoding.
var (
	errNotObject    = errors.New("not one JSON object")
	errDuplicateKey = errors.New("duplicate key")
	errDecode       = errors.New("unknown key or wrong value type")
)

// strictDecode decodes exactly one JSON object into v: valid JSON, no duplicate key at any depth,
// no key v does not have, every value of its field's type, nothing after the object.
func strictDecode(data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return errNotObject
	}
	if err := noDuplicateKeys(trimmed); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errDecode
	}
	if dec.More() {
		return errNotObject // unreachable after json.Valid, kept as the decoder's own check
	}
	return nil
}

// noDuplicateKeys walks a valid JSON document and refuses an object with a repeated key.
func noDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next token in this object is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return errNotObject
		}
		top := len(stack) - 1
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top >= 0 && stack[top].object {
					stack[top].key = true // this value ends the pair
				}
				stack = append(stack, frame{keys: map[string]bool{}, object: d == '{', key: d == '{'})
			default:
				stack = stack[:top]
			}
			continue
		}
		if top < 0 || !stack[top].object {
			continue
		}
		f := &stack[top]
		if f.key {
			k := tok.(string)
			if f.keys[k] {
				return errDuplicateKey
			}
			f.keys[k] = true
			f.key = false
		} else {
			f.key = true
		}
	}
}
