package routing

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is the request parser's JSON scanner: it walks the caller's bytes in place, validates
// them exactly as encoding/json does (json.Valid's decisions, its nesting limit included) and
// allocates nothing. Values the router does not read are skipped, never materialized; the walkers in
// request.go step into the few structures the gates measure.

// maxDepth is encoding/json's nesting limit: more nested arrays and objects are a syntax error there,
// and so here.
const maxDepth = 10000

// errSyntax marks input encoding/json would refuse; the caller answers ErrBadJSON.
var errSyntax = errors.New("routing: json syntax error")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// strFlags says what a string literal holds beyond plain printable ASCII.
type strFlags uint8

const (
	strEscaped  strFlags = 1 << iota // at least one backslash escape
	strNonASCII                      // at least one byte >= 0x80
)

// scanString validates the string literal whose opening quote is b[i] and returns the index after
// its closing quote.
func scanString(b []byte, i int) (int, strFlags, error) {
	var flags strFlags
	i++ // the opening quote
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, flags, nil
		case c == '\\':
			flags |= strEscaped
			if i+1 >= len(b) {
				return i, flags, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(b, i+2) < 0 {
					return i, flags, errSyntax
				}
				i += 6
			default:
				return i, flags, errSyntax
			}
		case c < 0x20:
			return i, flags, errSyntax
		default:
			if c >= utf8.RuneSelf {
				flags |= strNonASCII
			}
			i++
		}
	}
	return i, flags, errSyntax
}

// hex4 reads four hex digits at b[i:], or returns -1.
func hex4(b []byte, i int) rune {
	if i+4 > len(b) {
		return -1
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// unescape calls emit with each rune of a validated string literal's contents (quotes excluded),
// decoded exactly as encoding/json decodes it: escapes resolved, a valid surrogate pair joined, a lone
// surrogate and every byte of malformed UTF-8 replaced by U+FFFD. It stops early when emit returns
// false.
func unescape(raw []byte, emit func(r rune) bool) {
	for i := 0; i < len(raw); {
		c := raw[i]
		var r rune
		switch {
		case c == '\\':
			r, i = unescapeOne(raw, i)
		case c < utf8.RuneSelf:
			r, i = rune(c), i+1
		default:
			var size int
			r, size = utf8.DecodeRune(raw[i:])
			i += size
		}
		if !emit(r) {
			return
		}
	}
}

// unescapeOne decodes the escape at raw[i] (validated by scanString) and returns the rune and the
// index after it.
func unescapeOne(raw []byte, i int) (rune, int) {
	switch raw[i+1] {
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	case 'u':
		r := hex4(raw, i+2)
		if !utf16.IsSurrogate(r) {
			return r, i + 6
		}
		if i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
			if dec := utf16.DecodeRune(r, hex4(raw, i+8)); dec != utf8.RuneError {
				return dec, i + 12
			}
		}
		return utf8.RuneError, i + 6
	}
	return rune(raw[i+1]), i + 2 // '"', '\\' or '/'
}

// decodedLen is the length in bytes of a validated string literal's contents once decoded (what
// len(s) is after json.Unmarshal into a string), computed without decoding into memory.
func decodedLen(raw []byte, flags strFlags) int64 {
	if flags == 0 || (flags == strNonASCII && utf8.Valid(raw)) {
		return int64(len(raw))
	}
	var n int64
	unescape(raw, func(r rune) bool {
		n += int64(utf8.RuneLen(r))
		return true
	})
	return n
}

// decodeSmall decodes a validated string literal's contents into buf when they fit; ok is false for
// longer strings, which then equal none of the short names the parser compares against.
func decodeSmall(raw []byte, flags strFlags, buf []byte) ([]byte, bool) {
	if flags&strEscaped == 0 && (flags == 0 || utf8.Valid(raw)) {
		return raw, true
	}
	out, ok := buf[:0], true
	unescape(raw, func(r rune) bool {
		if len(out)+utf8.RuneLen(r) > cap(buf) {
			ok = false
			return false
		}
		out = utf8.AppendRune(out, r)
		return true
	})
	return out, ok
}

// scanNumber validates the number literal at b[i] and returns the index after it and whether it is
// written as an integer (no fraction, no exponent).
func scanNumber(b []byte, i int) (int, bool, error) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return start, false, errSyntax
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		integer = false
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return start, false, errSyntax
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j := digits(b, i); j > i {
			i = j
		} else {
			return start, false, errSyntax
		}
	}
	return i, integer, nil
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func scanLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, errSyntax
	}
	return i + len(lit), nil
}

// scanScalar validates a string, number or literal at b[i].
func scanScalar(b []byte, i int) (int, error) {
	switch b[i] {
	case '"':
		end, _, err := scanString(b, i)
		return end, err
	case 't':
		return scanLiteral(b, i, "true")
	case 'f':
		return scanLiteral(b, i, "false")
	case 'n':
		return scanLiteral(b, i, "null")
	}
	end, _, err := scanNumber(b, i)
	return end, err
}

// skipValue validates the value starting at or after b[i] (leading space allowed) and returns the
// index after it. depth counts the arrays and objects around it. It is iterative, so a hostile
// nesting costs a bit per level on this stack frame, never a goroutine stack of recursion.
func skipValue(b []byte, i, depth int) (int, error) {
	var objects [maxDepth/64 + 1]uint64 // bit n: the container opened n levels down is an object
	level := 0                          // containers opened by this call
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, errSyntax
		}
		var err error
		if c := b[i]; c == '{' || c == '[' {
			if depth+level+1 > maxDepth {
				return i, errSyntax
			}
			objects[level/64] &^= 1 << (level % 64)
			if c == '{' {
				objects[level/64] |= 1 << (level % 64)
			}
			level++
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == closer(c) {
				i++
				level--
			} else {
				if c == '{' {
					if i, err = scanKey(b, i); err != nil {
						return i, err
					}
				}
				continue // the first element or member value
			}
		} else if i, err = scanScalar(b, i); err != nil {
			return i, err
		}
		// A value ended: close containers until one continues with a comma.
		for {
			if level == 0 {
				return i, nil
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, errSyntax
			}
			inObject := objects[(level-1)/64]&(1<<((level-1)%64)) != 0
			if b[i] == ',' {
				i++
				if inObject {
					if i, err = scanKey(b, i); err != nil {
						return i, err
					}
				}
				break
			}
			if (inObject && b[i] == '}') || (!inObject && b[i] == ']') {
				i++
				level--
				continue
			}
			return i, errSyntax
		}
	}
}

func closer(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

// scanKey validates `"key" :` at or after b[i] and returns the index after the colon.
func scanKey(b []byte, i int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '"' {
		return i, errSyntax
	}
	i, _, err := scanString(b, i)
	if err != nil {
		return i, err
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, errSyntax
	}
	return i + 1, nil
}

// member is one object member as the walkers see it: the key's raw contents (quotes excluded), their
// flags, and where the value starts (after the colon and any space).
type member struct {
	key   []byte
	flags strFlags
	value int
}

// eachMember walks the object whose '{' is b[i], calling f for every member; f returns the index
// after the member's value. depth counts the containers around the object. eachMember returns the
// index after the closing '}'.
func eachMember(b []byte, i, depth int, f func(m member) (int, error)) (int, error) {
	if depth+1 > maxDepth {
		return i, errSyntax
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return i, errSyntax
		}
		end, flags, err := scanString(b, i)
		if err != nil {
			return end, err
		}
		m := member{key: b[i+1 : end-1], flags: flags}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, errSyntax
		}
		m.value = skipSpace(b, i+1)
		if i, err = f(m); err != nil {
			return i, err
		}
		var more bool
		if i, more, err = endOfItem(b, i, '}'); err != nil || !more {
			return i, err
		}
	}
}

// eachElement walks the array whose '[' is b[i], calling f with the start of every element; f returns
// the index after the element. It returns the index after the closing ']'.
func eachElement(b []byte, i, depth int, f func(j int) (int, error)) (int, error) {
	if depth+1 > maxDepth {
		return i, errSyntax
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = f(skipSpace(b, i)); err != nil {
			return i, err
		}
		var more bool
		if i, more, err = endOfItem(b, i, ']'); err != nil || !more {
			return i, err
		}
	}
}

// endOfItem reads the comma or the closer after an element or member and returns the index after
// it; more is true after a comma.
func endOfItem(b []byte, i int, close byte) (next int, more bool, err error) {
	i = skipSpace(b, i)
	switch {
	case i >= len(b):
		return i, false, errSyntax
	case b[i] == ',':
		return i + 1, true, nil
	case b[i] == close:
		return i + 1, false, nil
	}
	return i, false, errSyntax
}
