// Package jsonscan is a zero-allocation JSON scanner that decides exactly as encoding/json does:
// json.Valid's verdicts (its nesting limit included) and json.Unmarshal's decoding of a string. It
// walks a document in place with free functions over (bytes, index) and materializes nothing; its
// callers (the router's request parser, the bench's answer scanner) step into the few structures
// they read and Skip the rest. It is pure: standard library only, no I/O, no clock, no goroutines.
//
// Every function takes the index of a value's first byte and returns the index after it. depth
// counts the arrays and objects already open around the value, so that MaxDepth holds across the
// caller's own descent. A differential fuzz test holds the scanner to encoding/json.
package jsonscan

import (
	"errors"
)

// MaxDepth is encoding/json's nesting limit: more nested arrays and objects are a syntax error there,
// and so here. The value opening level MaxDepth+1 is refused.
const MaxDepth = 10000

// ErrSyntax marks input encoding/json would refuse.
var ErrSyntax = errors.New("jsonscan: json syntax error")

// Valid reports whether b is one JSON document, as json.Valid does.
func Valid(b []byte) bool {
	end, err := Skip(b, 0, 0)
	return err == nil && SkipSpace(b, end) == len(b)
}

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first non-space byte at or after b[i].
func SkipSpace(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// Number validates the number literal at b[i] and returns the index after it and whether it is
// written as an integer (no fraction, no exponent).
func Number(b []byte, i int) (int, bool, error) {
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
		return start, false, ErrSyntax
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		integer = false
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return start, false, ErrSyntax
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
			return start, false, ErrSyntax
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

// Literal validates the literal lit (true, false or null) at b[i].
func Literal(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, ErrSyntax
	}
	return i + len(lit), nil
}

// scalar validates a string, number or literal at b[i].
func scalar(b []byte, i int) (int, error) {
	switch b[i] {
	case '"':
		end, _, err := String(b, i)
		return end, err
	case 't':
		return Literal(b, i, "true")
	case 'f':
		return Literal(b, i, "false")
	case 'n':
		return Literal(b, i, "null")
	}
	end, _, err := Number(b, i)
	return end, err
}

// Skip validates the value starting at or after b[i] (leading space allowed) and returns the
// index after it. depth counts the arrays and objects around it. It is iterative, so a hostile
// nesting costs a bit per level on this stack frame, never a goroutine stack of recursion.
func Skip(b []byte, i, depth int) (int, error) {
	var objects [MaxDepth/64 + 1]uint64 // bit n: the container opened n levels down is an object
	level := 0                          // containers opened by this call
	for {
		i = SkipSpace(b, i)
		if i >= len(b) {
			return i, ErrSyntax
		}
		var err error
		if c := b[i]; c == '{' || c == '[' {
			if depth+level+1 > MaxDepth {
				return i, ErrSyntax
			}
			objects[level/64] &^= 1 << (level % 64)
			if c == '{' {
				objects[level/64] |= 1 << (level % 64)
			}
			level++
			i = SkipSpace(b, i+1)
			if i < len(b) && b[i] == closer(c) {
				i++
				level--
			} else {
				if c == '{' {
					if i, err = Key(b, i); err != nil {
						return i, err
					}
				}
				continue // the first element or Member value
			}
		} else if i, err = scalar(b, i); err != nil {
			return i, err
		}
		// A value ended: close containers until one continues with a comma.
		for {
			if level == 0 {
				return i, nil
			}
			i = SkipSpace(b, i)
			if i >= len(b) {
				return i, ErrSyntax
			}
			inObject := objects[(level-1)/64]&(1<<((level-1)%64)) != 0
			if b[i] == ',' {
				i++
				if inObject {
					if i, err = Key(b, i); err != nil {
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
			return i, ErrSyntax
		}
	}
}

func closer(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

// Key validates `"key" :` at or after b[i] and returns the index after the colon.
func Key(b []byte, i int) (int, error) {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '"' {
		return i, ErrSyntax
	}
	i, _, err := String(b, i)
	if err != nil {
		return i, err
	}
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, ErrSyntax
	}
	return i + 1, nil
}

// Member is one object Member as the walkers see it: the key's raw contents (quotes excluded), their
// flags, and where the value starts (after the colon and any space).
type Member struct {
	Key   []byte
	Flags Flags
	Value int
}

// EachMember walks the object whose '{' is b[i], calling f for every Member; f returns the index
// after the Member's value. depth counts the containers around the object. EachMember returns the
// index after the closing '}'.
func EachMember(b []byte, i, depth int, f func(m Member) (int, error)) (int, error) {
	if depth+1 > MaxDepth {
		return i, ErrSyntax
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		i = SkipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return i, ErrSyntax
		}
		end, flags, err := String(b, i)
		if err != nil {
			return end, err
		}
		m := Member{Key: b[i+1 : end-1], Flags: flags}
		i = SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, ErrSyntax
		}
		m.Value = SkipSpace(b, i+1)
		if i, err = f(m); err != nil {
			return i, err
		}
		var more bool
		if i, more, err = EndOfItem(b, i, '}'); err != nil || !more {
			return i, err
		}
	}
}

// EachElement walks the array whose '[' is b[i], calling f with the start of every element; f returns
// the index after the element. It returns the index after the closing ']'.
func EachElement(b []byte, i, depth int, f func(j int) (int, error)) (int, error) {
	if depth+1 > MaxDepth {
		return i, ErrSyntax
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = f(SkipSpace(b, i)); err != nil {
			return i, err
		}
		var more bool
		if i, more, err = EndOfItem(b, i, ']'); err != nil || !more {
			return i, err
		}
	}
}

// EndOfItem reads the comma or the closer after an element or Member and returns the index after
// it; more is true after a comma.
func EndOfItem(b []byte, i int, close byte) (next int, more bool, err error) {
	i = SkipSpace(b, i)
	switch {
	case i >= len(b):
		return i, false, ErrSyntax
	case b[i] == ',':
		return i + 1, true, nil
	case b[i] == close:
		return i + 1, false, nil
	}
	return i, false, ErrSyntax
}
