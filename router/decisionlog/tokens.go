package decisionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/anvil-llm/anvil/router/ident"
)

// The schema-directed token reader the decoder is built on (decode.go): objects with closed key
// sets, bounded arrays and typed scalars, each refused at its first wrong token.

// tokens is a schema-directed reader over encoding/json's token stream. It checks
// each value's type from its first token, so unknown keys and wrongly typed values are
// refused before anything inside them is read.
type tokens struct{ dec *json.Decoder }

func newTokens(line []byte) tokens {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	return tokens{dec: d}
}

func (t tokens) next() (json.Token, error) {
	tok, err := t.dec.Token()
	if err != nil {
		return nil, ErrSyntax
	}
	return tok, nil
}

// object reads one object whose keys must come from keys (each at most once) and
// calls field for every key with its index. Every key optional does not name is required.
func (t tokens) object(path string, keys []string, optional func(string) bool, field func(i int, path string) error) error {
	tok, err := t.next()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return &fieldError{path, ErrWrongType}
	}
	var seen uint32 // key sets have at most 32 entries (the record's: 21)
	for t.dec.More() {
		tok, err := t.next()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // the decoder only yields strings in key position
		i := indexOf(keys, key)
		if i < 0 {
			return &fieldError{path, ErrUnknownField}
		}
		p := join(path, key)
		if seen&(1<<i) != 0 {
			return &fieldError{p, ErrDuplicateField}
		}
		seen |= 1 << i
		if err := field(i, p); err != nil {
			return err
		}
	}
	if _, err := t.next(); err != nil { // the closing brace
		return err
	}
	for i, k := range keys {
		if seen&(1<<i) == 0 && !optional(k) {
			return &fieldError{join(path, k), ErrMissingField}
		}
	}
	return nil
}

// array reads an array of at most ident.MaxMembers items, calling item for each.
func (t tokens) array(path string, item func(i int, path string) error) error {
	tok, err := t.next()
	if err != nil {
		return err
	}
	if tok != json.Delim('[') {
		return &fieldError{path, ErrWrongType}
	}
	for i := 0; t.dec.More(); i++ {
		if i == ident.MaxMembers {
			return &fieldError{path, ErrTooManyItems}
		}
		if err := item(i, path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	_, err = t.next() // the closing bracket
	return err
}

func (t tokens) str(path string) (string, error) {
	tok, err := t.next()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", &fieldError{path, ErrWrongType}
	}
	return s, nil
}

func (t tokens) boolean(path string) (bool, error) {
	tok, err := t.next()
	if err != nil {
		return false, err
	}
	v, ok := tok.(bool)
	if !ok {
		return false, &fieldError{path, ErrWrongType}
	}
	return v, nil
}

// integer reads an exact JSON integer in lo..hi. Fractions and exponents are the wrong
// type; integers outside the range (or int64) are invalid values. With nullable, null
// yields present=false.
func (t tokens) integer(path string, lo, hi int64, nullable bool) (v int64, present bool, err error) {
	tok, err := t.next()
	if err != nil {
		return 0, false, err
	}
	if tok == nil && nullable {
		return 0, false, nil
	}
	num, ok := tok.(json.Number)
	if !ok {
		return 0, false, &fieldError{path, ErrWrongType}
	}
	v, perr := strconv.ParseInt(string(num), 10, 64)
	if perr != nil {
		if errors.Is(perr, strconv.ErrRange) {
			return 0, false, &fieldError{path, ErrInvalidValue}
		}
		return 0, false, &fieldError{path, ErrWrongType}
	}
	if v < lo || v > hi {
		return 0, false, &fieldError{path, ErrInvalidValue}
	}
	return v, true, nil
}

// end requires that nothing but whitespace follows the object.
func (t tokens) end() error {
	if _, err := t.dec.Token(); err != io.EOF {
		return ErrTrailingData
	}
	return nil
}
