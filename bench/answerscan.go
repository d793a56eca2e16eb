package bench

import (
	"errors"
	"strings"

	"github.com/anvil-llm/anvil/internal/jsonscan"
)

// The answer scanner reads the few fields the measurement needs from one JSON document in a
// single pass, validating the whole document as it goes and allocating nothing on the common path.
// It decides exactly as encoding/json would decode the document into answerJSON (with the
// custom types' UnmarshalJSON methods): the same documents are refused, duplicate keys merge the
// same way, and keys match under case folding. A key or a tag string written with escapes
// goes through the shared decoder's small buffer. The syntax, the nesting bound (jsonscan.MaxDepth,
// counted across this walk and jsonscan.Skip alike) and the string decoding are internal/jsonscan's;
// this file holds only the walk into the fields the bench reads. A differential fuzz test holds it
// to encoding/json.
//
// encoding/json's reflection costs several microseconds and allocations per chunk, which at
// tens of thousands of streams would make the bench the bottleneck it measures.

var errScan = errors.New("invalid JSON")

// maxKeyBytes bounds a decoded key that can still equal a field name under case folding (the longest
// name is 17 ASCII letters; a folded letter takes at most 3 bytes). Longer keys match no field.
const maxKeyBytes = 64

type jsonScan struct {
	b     []byte
	i     int
	depth int
}

// scanAnswer scans data into d (which the caller zeroed).
func scanAnswer(data []byte, d *answerJSON) error {
	s := jsonScan{b: data}
	s.ws()
	var err error
	switch s.peek() {
	case '{':
		err = s.object(func(key []byte) error { return s.topField(key, d) })
	case 'n':
		err = s.literal("null") // null into a struct is no change
	default:
		if err = s.skip(); err == nil {
			err = errAnswer // a valid document of the wrong type
		}
	}
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return errScan
	}
	return nil
}

func (s *jsonScan) topField(key []byte, d *answerJSON) error {
	switch {
	case keyIs(key, "object"):
		return s.tag(&d.Object)
	case keyIs(key, "type"):
		return s.tag(&d.Type)
	case keyIs(key, "status"):
		return s.tag(&d.Status)
	case keyIs(key, "choices"):
		return s.choices(&d.Choices)
	case keyIs(key, "delta"):
		return s.text(&d.Delta)
	case keyIs(key, "usage"):
		return s.usage(&d.Usage)
	case keyIs(key, "response"):
		return s.structOrNull(func() error {
			return s.object(func(key []byte) error {
				if keyIs(key, "usage") {
					return s.usage(&d.Response.Usage)
				}
				return s.skip()
			})
		})
	case keyIs(key, "error"):
		isNull := s.peek() == 'n'
		if err := s.skip(); err != nil {
			return err
		}
		d.Error = present(!isNull)
		return nil
	}
	return s.skip()
}

// choices decodes a JSON array into the one-element array: the first element merges into it, an
// empty array zeroes it, null leaves it, more elements are only validated.
func (s *jsonScan) choices(c *[1]choiceJSON) error {
	switch s.peek() {
	case 'n':
		return s.literal("null")
	case '[':
	default:
		return s.typeMismatch()
	}
	s.i++
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	s.ws()
	if s.peek() == ']' {
		s.i++
		c[0] = choiceJSON{}
		return nil
	}
	var mismatch error
	for n := 0; ; n++ {
		var err error
		if n == 0 {
			err = s.structOrNull(func() error { return s.object(func(key []byte) error { return s.choiceField(key, &c[0]) }) })
		} else {
			err = s.skip()
		}
		if err == errTypeMismatch {
			mismatch = err
		} else if err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case ']':
			s.i++
			return mismatch
		default:
			return errScan
		}
	}
}

func (s *jsonScan) choiceField(key []byte, c *choiceJSON) error {
	switch {
	case keyIs(key, "delta"):
		return s.content(&c.Delta)
	case keyIs(key, "message"):
		return s.content(&c.Message)
	case keyIs(key, "text"):
		return s.text(&c.Text)
	}
	return s.skip()
}

func (s *jsonScan) content(c *contentJSON) error {
	return s.structOrNull(func() error {
		return s.object(func(key []byte) error {
			if keyIs(key, "content") {
				return s.text(&c.Content)
			}
			return s.skip()
		})
	})
}

func (s *jsonScan) usage(u *usageJSON) error {
	return s.structOrNull(func() error {
		return s.object(func(key []byte) error {
			switch {
			case keyIs(key, "prompt_tokens"):
				return s.optInt(&u.PromptTokens)
			case keyIs(key, "completion_tokens"):
				return s.optInt(&u.CompletionTokens)
			case keyIs(key, "input_tokens"):
				return s.optInt(&u.InputTokens)
			case keyIs(key, "output_tokens"):
				return s.optInt(&u.OutputTokens)
			}
			return s.skip()
		})
	})
}

// errTypeMismatch is encoding/json's UnmarshalTypeError: the document is still scanned to its
// end (a syntax error later wins), then refused.
var errTypeMismatch = errors.New("JSON value of the wrong type")

// structOrNull scans an object with fn, accepts null as no change, and reports any other value
// as a type mismatch after validating it.
func (s *jsonScan) structOrNull(fn func() error) error {
	switch s.peek() {
	case '{':
		return fn()
	case 'n':
		return s.literal("null")
	}
	return s.typeMismatch()
}

func (s *jsonScan) typeMismatch() error {
	if err := s.skip(); err != nil {
		return err
	}
	return errTypeMismatch
}

// tag reads a tag: a string, or null for none; anything else is refused at once, as the custom
// UnmarshalJSON does.
func (s *jsonScan) tag(t *tag) error {
	start := s.i
	if err := s.skip(); err != nil {
		return err
	}
	return t.UnmarshalJSON(s.b[start:s.i]) // no allocation without escapes
}

func (s *jsonScan) text(f *textFlag) error {
	start := s.i
	if err := s.skip(); err != nil {
		return err
	}
	return f.UnmarshalJSON(s.b[start:s.i])
}

func (s *jsonScan) optInt(o *optInt) error {
	start := s.i
	if err := s.skip(); err != nil {
		return err
	}
	raw := s.b[start:s.i]
	if string(raw) == "null" {
		*o = optInt{}
		return nil
	}
	v, ok := parseCount(raw)
	if !ok {
		return errAnswer
	}
	*o = optInt{v: v, set: true}
	return nil
}

// parseCount reads a JSON number as strconv.ParseInt(s, 10, 64) would, accepting only counts from 0
// to maxTokens ("-0" is 0).
func parseCount(raw []byte) (int64, bool) {
	neg := len(raw) > 0 && raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	if len(raw) == 0 || len(raw) > 16 {
		return 0, false
	}
	var v int64
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg && v != 0 || v > maxTokens {
		return 0, false
	}
	return v, true
}

// object scans an object, calling field with each key (unescaped) while positioned at its value.
// A type mismatch inside is remembered and reported once the object is scanned.
func (s *jsonScan) object(field func(key []byte) error) error {
	s.i++ // '{'
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	s.ws()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	var mismatch error
	for {
		if s.peek() != '"' {
			return errScan
		}
		start := s.i
		end, flags, err := jsonscan.String(s.b, s.i)
		if err != nil {
			return errScan
		}
		s.i = end
		key := s.b[start+1 : end-1]
		if flags&jsonscan.Escaped != 0 {
			// The slow path: the key escapes to the field function, so its buffer is the heap's.
			// Raw invalid UTF-8 needs no decoding: it folds to no field name, decoded or not.
			var ok bool
			if key, ok = jsonscan.DecodeSmall(key, flags, make([]byte, 0, maxKeyBytes)); !ok {
				key = nil // too long to equal any field name
			}
		}
		s.ws()
		if s.peek() != ':' {
			return errScan
		}
		s.i++
		s.ws()
		if err := field(key); err == errTypeMismatch {
			mismatch = err
		} else if err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			return mismatch
		default:
			return errScan
		}
	}
}

func (s *jsonScan) enter() error {
	s.depth++
	if s.depth > jsonscan.MaxDepth {
		return errScan
	}
	return nil
}

func (s *jsonScan) leave() { s.depth-- }

// skip validates and passes one value, counting the containers this walk has entered.
func (s *jsonScan) skip() error {
	end, err := jsonscan.Skip(s.b, s.i, s.depth)
	if err != nil {
		return errScan
	}
	s.i = end
	return nil
}

func (s *jsonScan) literal(word string) error {
	end, err := jsonscan.Literal(s.b, s.i, word)
	if err != nil {
		return errScan
	}
	s.i = end
	return nil
}

func (s *jsonScan) ws() { s.i = jsonscan.SkipSpace(s.b, s.i) }

func (s *jsonScan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// keyIs matches a key to a lower-case ASCII field name under Unicode case folding, as
// encoding/json matches keys to fields (so the Kelvin sign matches k); ASCII keys take a fast path.
func keyIs(key []byte, name string) bool {
	for i := range len(key) {
		if key[i] >= 0x80 {
			return strings.EqualFold(string(key), name)
		}
	}
	if len(key) != len(name) {
		return false
	}
	for i := range len(key) {
		c := key[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}
