package readiness

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// model is one entry of a /v1/models list, as the identity rule reads it.
type model struct{ id, parent, root string }

// decodeModels reads a /v1/models body strictly (see CheckModels).
func decodeModels(body []byte) ([]model, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	top, ok := object(dec)
	if !ok {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false // trailing data
	}
	data, ok := top["data"]
	if !ok {
		return nil, false
	}
	dd := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dd.Token(); err != nil || tok != json.Delim('[') {
		return nil, false
	}
	var out []model
	for dd.More() {
		fields, ok := object(dd)
		if !ok {
			return nil, false
		}
		var m model
		if err := json.Unmarshal(fields["id"], &m.id); err != nil || m.id == "" {
			return nil, false
		}
		if m.parent, ok = optString(fields, "parent"); !ok {
			return nil, false
		}
		if m.root, ok = optString(fields, "root"); !ok {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

// object reads one JSON object from dec with exact keys, refusing a key given twice.
func object(dec *json.Decoder) (map[string]json.RawMessage, bool) {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	out := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return nil, false
		}
		if _, dup := out[key]; dup {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out[key] = v
	}
	_, err := dec.Token() // the closing brace
	return out, err == nil
}

// optString reads an optional string field: absent and null are "".
func optString(fields map[string]json.RawMessage, key string) (string, bool) {
	raw, ok := fields[key]
	if !ok || string(raw) == "null" {
		return "", true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}
