package request

import "unicode/utf8"

// equalFold reports whether key equals an ASCII name under Unicode simple case folding, as
// strings.EqualFold (and encoding/json's field matching) decide it. Only two non-ASCII runes fold to
// ASCII letters: the Kelvin sign to k and the long s to s.
func equalFold(key []byte, name string) bool {
	if len(key) < len(name) || len(key) > 3*len(name) {
		return false
	}
	i := 0
	for j := 0; j < len(name); j++ {
		if i >= len(key) {
			return false
		}
		r, size := rune(key[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(key[i:])
		}
		i += size
		if !foldsTo(r, name[j]) {
			return false
		}
	}
	return i == len(key)
}

// foldsTo reports whether rune r folds to the ASCII byte c.
func foldsTo(r rune, c byte) bool {
	switch {
	case r == rune(c):
		return true
	case 'a' <= c && c <= 'z' && r == rune(c-'a'+'A'):
		return true
	case c == 'k':
		return r == '\u212a' // KELVIN SIGN
	case c == 's':
		return r == '\u017f' // LATIN SMALL LETTER LONG S
	}
	return false
}
