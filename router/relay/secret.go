package relay

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
)

// leakCheck finds the upstream's API key in bytes the relay is about to hand a caller: an upstream
// error body or an SSE error event. Upstreams echo keys when they refuse them (OpenAI's "Incorrect API
// key provided: sk-abc12****...wxyz"), and some echo them whole. A key is found in any of these forms:
//
//   - the key itself, or as encoding/json escapes it;
//   - any 8 consecutive characters of it (the whole key when shorter): a truncated key, a long prefix;
//   - at least 4 of its first characters followed by a mask: "sk-RoCv****", "sk-proj-...";
//   - a mask followed by its last 3 or 4 characters: "****wxyz", "...xyz", "•••wxyz".
//
// A mask is a run of at least three '*', '.', 'x', 'X', '•' or '…'. The check is built on first use, so
// a relay that never sees an error pays nothing; a false positive only replaces an error body with the
// relay's own fixed error.
//
// These heuristics are for errors only. A successful answer is model output, in which "sk-p...", an
// 8-character run that a long key happens to contain, or "****abcd" are ordinary text: applied there
// they would refuse honest answers. Successful answers are scanned for the whole key instead (keyScan).
type leakCheck struct {
	key    []byte
	built  bool
	forms  [][]byte            // the key and its JSON-escaped form
	window int                 // the length of the runs in grams
	grams  map[uint64]struct{} // every window-long run of the key, packed little-endian
}

func newLeakCheck(key string) *leakCheck { return &leakCheck{key: []byte(key)} }

func (c *leakCheck) build() {
	c.built = true
	c.forms = [][]byte{c.key}
	if esc, _ := json.Marshal(string(c.key)); !bytes.Equal(esc[1:len(esc)-1], c.key) {
		c.forms = append(c.forms, esc[1:len(esc)-1])
	}
	c.window = min(8, len(c.key))
	c.grams = make(map[uint64]struct{}, len(c.key))
	for i := 0; i+c.window <= len(c.key); i++ {
		c.grams[pack(c.key[i:i+c.window])] = struct{}{}
	}
}

// pack reads up to 8 bytes as one number, so runs compare as map keys without allocating.
func pack(b []byte) uint64 {
	var buf [8]byte
	copy(buf[:], b)
	return binary.LittleEndian.Uint64(buf[:])
}

// in reports whether b carries the key in one of the forms above. A nil check (no key) finds nothing.
func (c *leakCheck) in(b []byte) bool {
	if c == nil || len(c.key) == 0 {
		return false
	}
	if !c.built {
		c.build()
	}
	for _, f := range c.forms {
		if bytes.Contains(b, f) {
			return true
		}
	}
	for i := 0; i+c.window <= len(b); i++ {
		if _, ok := c.grams[pack(b[i:i+c.window])]; ok {
			return true
		}
	}
	for i := 0; i < len(b); {
		n := maskRun(b[i:])
		if n == 0 {
			i++
			continue
		}
		if c.prefixBefore(b[:i]) || c.suffixAfter(b[i+n:]) {
			return true
		}
		i += n
	}
	return false
}

// prefixBefore reports whether b ends with the key's first k characters for some k >= 4. Longer
// prefixes than 7 hold an 8-character run, which the grams already find.
func (c *leakCheck) prefixBefore(b []byte) bool {
	for k := 4; k <= 7 && k <= len(c.key) && k <= len(b); k++ {
		if bytes.Equal(b[len(b)-k:], c.key[:k]) {
			return true
		}
	}
	return false
}

// suffixAfter reports whether b starts with the key's last 3 or 4 characters.
func (c *leakCheck) suffixAfter(b []byte) bool {
	for _, k := range []int{3, 4} {
		if k <= len(c.key) && bytes.HasPrefix(b, c.key[len(c.key)-k:]) {
			return true
		}
	}
	return false
}

// maskRun returns the length in bytes of the mask run at the start of b, or 0 when there is none (fewer
// than three mask characters).
func maskRun(b []byte) int {
	n, chars := 0, 0
	for n < len(b) {
		size := maskChar(b[n:])
		if size == 0 {
			break
		}
		n += size
		chars++
	}
	if chars < 3 {
		return 0
	}
	return n
}

func maskChar(b []byte) int {
	switch {
	case b[0] == '*' || b[0] == '.' || b[0] == 'x' || b[0] == 'X':
		return 1
	case bytes.HasPrefix(b, []byte("\u2022")), bytes.HasPrefix(b, []byte("\u2026")): // • …
		return 3
	}
	return 0
}
