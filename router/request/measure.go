package request

import (
	"errors"

	"github.com/anvil-llm/anvil/internal/jsonscan"
)

// measure accumulates prompt text size, message count and media presence while walking the prompt
// fields of a body that scan has validated. The walkers step into messages, content parts and
// Responses items and skip everything else in place; depth arguments count the arrays and objects
// around a value, as jsonscan.Skip's do.
type measure struct {
	b               []byte
	bytes, messages int64
	media           bool
	seen            bool
}

func (m *measure) tokens() int64 { return EstimateTokens(m.bytes, m.messages) }

func (m *measure) prompt(ep Endpoint, p *parser) error {
	var err error
	switch ep {
	case ChatCompletions:
		err = m.field(p, fieldMessages, m.messageList)
	case Completions:
		err = m.field(p, fieldPrompt, m.textOrList)
	case Responses:
		if err = m.field(p, fieldInput, m.responsesInput); err == nil {
			err = m.field(p, fieldInstructions, func(i int, name string) error {
				_, err := m.text(i, name)
				return err
			})
		}
	case Embeddings:
		err = m.field(p, fieldInput, m.textOrList)
	case AudioSpeech:
		// The text to speak: one string, measured like a prompt so the context gate bounds it.
		err = m.field(p, fieldInput, func(i int, name string) error {
			m.seen = true
			_, err := m.text(i, name)
			return err
		})
	}
	switch {
	case errors.Is(err, jsonscan.ErrSyntax): // unreachable after scan; never let it pass as a field error
		return ErrBadJSON
	case err != nil:
		return err
	case !m.seen:
		return ErrMissingInput
	}
	return nil
}

// field runs walk on a top-level field's value when it is present and not null.
func (m *measure) field(p *parser, f field, walk func(i int, name string) error) error {
	i, ok := p.value(f)
	if !ok {
		return nil
	}
	return walk(i, fieldNames[f])
}

// text measures the string at b[i], decoded, and returns the index after it; any other value is the
// wrong type.
func (m *measure) text(i int, name string) (int, error) {
	if m.b[i] != '"' {
		return i, &FieldError{name}
	}
	end, flags, err := jsonscan.String(m.b, i)
	if err != nil {
		return end, err
	}
	m.bytes += jsonscan.DecodedLen(m.b[i+1:end-1], flags)
	return end, nil
}

// textOrList accepts a string, a non-empty list of strings, or token ID lists (counted one token per ID,
// at three bytes each so the estimate stays conservative), at the top level of the body.
func (m *measure) textOrList(i int, name string) error {
	m.seen = true
	b := m.b
	switch b[i] {
	case '"':
		_, err := m.text(i, name)
		return err
	case '[':
	default:
		return &FieldError{name}
	}
	items := 0
	_, err := jsonscan.EachElement(b, i, 1, func(j int) (int, error) {
		items++
		switch b[j] {
		case '"':
			return m.text(j, name)
		case '[':
			return jsonscan.EachElement(b, j, 2, func(k int) (int, error) {
				m.bytes += 3
				return tokenID(b, k, name)
			})
		}
		m.bytes += 3
		return tokenID(b, j, name)
	})
	if err == nil && items == 0 {
		return &FieldError{name}
	}
	return err
}

// tokenID accepts a token ID: an integer that fits int64, or null (which encoding/json decodes into an
// int64 as "no change", and which the parser has always counted).
func tokenID(b []byte, i int, name string) (int, error) {
	if b[i] == 'n' {
		return jsonscan.Literal(b, i, "null")
	}
	end, integer, err := jsonscan.Number(b, i)
	if err != nil || !integer || !fitsInt64(b[i:end]) {
		return end, &FieldError{name}
	}
	return end, nil
}

// fitsInt64 reports whether an integer literal lies in int64's range.
func fitsInt64(lit []byte) bool {
	const most, least = "9223372036854775807", "9223372036854775808"
	limit := most
	if lit[0] == '-' {
		lit, limit = lit[1:], least
	}
	if len(lit) != len(limit) {
		return len(lit) < len(limit)
	}
	return string(lit) <= limit
}

// messageList walks a chat messages list: a non-empty list of objects whose content (under every key
// folding to "content", each copy) is measured.
func (m *measure) messageList(i int, name string) error {
	b := m.b
	if b[i] != '[' {
		return &FieldError{name}
	}
	count := 0
	_, err := jsonscan.EachElement(b, i, 1, func(j int) (int, error) {
		count++
		if b[j] != '{' {
			return j, &FieldError{name}
		}
		m.messages++
		return jsonscan.EachMember(b, j, 2, func(k jsonscan.Member) (int, error) {
			if keyFolds(k, "content") {
				return m.content(k.Value, 3, name)
			}
			return jsonscan.Skip(b, k.Value, 3)
		})
	})
	if err == nil && count == 0 {
		return &FieldError{name}
	}
	m.seen = true
	return err
}

// content measures a message's content: null, a string, or a list of content parts.
func (m *measure) content(i, depth int, name string) (int, error) {
	b := m.b
	switch b[i] {
	case 'n':
		return jsonscan.Literal(b, i, "null") // assistant tool-call messages may carry no content
	case '"':
		return m.text(i, name)
	case '[':
		return jsonscan.EachElement(b, i, depth, func(j int) (int, error) {
			if b[j] != '{' {
				return j, &FieldError{name}
			}
			return m.part(j, depth+1, name, false)
		})
	}
	return i, &FieldError{name}
}

// mediaNames are the content-part types that carry images, audio, video or files in the chat and
// Responses dialects. A part also counts as media when it carries one of these as a key (spelled in
// any case), whatever its type says, because servers accept typeless media parts.
var mediaNames = [...]string{"image_url", "input_image", "input_audio", "audio_url", "video_url",
	"input_video", "file", "input_file", "image", "image_embeds", "audio", "video"}

// isMediaType reports whether a type value names a media part exactly.
func isMediaType(typ []byte) bool {
	for _, name := range mediaNames {
		if string(typ) == name {
			return true
		}
	}
	return false
}

// isMediaKey reports whether a decoded key folds to a media part name.
func isMediaKey(key []byte) bool {
	for _, name := range mediaNames {
		if equalFold(key, name) {
			return true
		}
	}
	return false
}

// part walks one content part or Responses item (the object at b[j]): every key folding to "type" must
// be a string or null and marks media when its value names a media part; every key folding to "text"
// (and to "content", for Responses items) is measured; a key folding to a media name marks media.
func (m *measure) part(j, depth int, name string, item bool) (int, error) {
	b := m.b
	return jsonscan.EachMember(b, j, depth, func(k jsonscan.Member) (int, error) {
		var buf [maxKeyBytes]byte
		key, ok := jsonscan.DecodeSmall(k.Key, k.Flags, buf[:])
		switch {
		case !ok:
		case equalFold(key, "type"):
			return m.partType(k.Value, name)
		case equalFold(key, "text"):
			if b[k.Value] == 'n' {
				return jsonscan.Literal(b, k.Value, "null")
			}
			return m.text(k.Value, name)
		case item && equalFold(key, "content"):
			return m.content(k.Value, depth+1, name)
		case isMediaKey(key):
			m.media = true
		}
		return jsonscan.Skip(b, k.Value, depth+1)
	})
}

// partType reads a type value: null, or a string that marks media when it names a media part.
func (m *measure) partType(i int, name string) (int, error) {
	b := m.b
	switch b[i] {
	case 'n':
		return jsonscan.Literal(b, i, "null")
	case '"':
		end, flags, err := jsonscan.String(b, i)
		if err != nil {
			return end, err
		}
		var buf [maxKeyBytes]byte
		if typ, ok := jsonscan.DecodeSmall(b[i+1:end-1], flags, buf[:]); ok && isMediaType(typ) {
			m.media = true
		}
		return end, nil
	}
	return i, &FieldError{name}
}

// keyFolds reports whether a member's key equals name exactly or under case folding.
func keyFolds(k jsonscan.Member, name string) bool {
	var buf [maxKeyBytes]byte
	key, ok := jsonscan.DecodeSmall(k.Key, k.Flags, buf[:])
	return ok && equalFold(key, name)
}

// responsesInput walks the Responses API input: a string, or a non-empty list of items that are either
// messages ({role, content}) or typed items. Every item's text and content are measured, media items'
// included.
func (m *measure) responsesInput(i int, name string) error {
	b := m.b
	switch b[i] {
	case '"':
		m.seen = true
		m.messages++
		_, err := m.text(i, name)
		return err
	case '[':
	default:
		return &FieldError{name}
	}
	count := 0
	_, err := jsonscan.EachElement(b, i, 1, func(j int) (int, error) {
		count++
		if b[j] != '{' {
			return j, &FieldError{name}
		}
		m.messages++
		return m.part(j, 2, name, true)
	})
	if err == nil && count == 0 {
		return &FieldError{name}
	}
	m.seen = true
	return err
}
