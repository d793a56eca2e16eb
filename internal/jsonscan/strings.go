package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Flags says what a string literal holds beyond plain printable ASCII.
type Flags uint8

const (
	Escaped  Flags = 1 << iota // at least one backslash escape
	NonASCII                   // at least one byte >= 0x80
)

// String validates the string literal whose opening quote is b[i] and returns the index after
// its closing quote.
func String(b []byte, i int) (int, Flags, error) {
	var flags Flags
	i++ // the opening quote
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, flags, nil
		case c == '\\':
			flags |= Escaped
			if i+1 >= len(b) {
				return i, flags, ErrSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(b, i+2) < 0 {
					return i, flags, ErrSyntax
				}
				i += 6
			default:
				return i, flags, ErrSyntax
			}
		case c < 0x20:
			return i, flags, ErrSyntax
		default:
			if c >= utf8.RuneSelf {
				flags |= NonASCII
			}
			i++
		}
	}
	return i, flags, ErrSyntax
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

// Unescape calls emit with each rune of a validated string literal's contents (quotes excluded),
// decoded exactly as encoding/json decodes it: escapes resolved, a valid surrogate pair joined, a lone
// surrogate and every byte of malformed UTF-8 replaced by U+FFFD. It stops early when emit returns
// false.
func Unescape(raw []byte, emit func(r rune) bool) {
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

// unescapeOne decodes the escape at raw[i] (validated by String) and returns the rune and the
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

// DecodedLen is the length in bytes of a validated string literal's contents once decoded (what
// len(s) is after json.Unmarshal into a string), computed without decoding into memory.
func DecodedLen(raw []byte, flags Flags) int64 {
	if flags == 0 || (flags == NonASCII && utf8.Valid(raw)) {
		return int64(len(raw))
	}
	var n int64
	Unescape(raw, func(r rune) bool {
		n += int64(utf8.RuneLen(r))
		return true
	})
	return n
}

// DecodeSmall decodes a validated string literal's contents into buf when they fit; ok is false for
// longer strings, which then equal none of the short names the parser compares against.
func DecodeSmall(raw []byte, flags Flags, buf []byte) ([]byte, bool) {
	if flags&Escaped == 0 && (flags == 0 || utf8.Valid(raw)) {
		return raw, true
	}
	out, ok := buf[:0], true
	Unescape(raw, func(r rune) bool {
		if len(out)+utf8.RuneLen(r) > cap(buf) {
			ok = false
			return false
		}
		out = utf8.AppendRune(out, r)
		return true
	})
	return out, ok
}
