package relay

import (
	"bytes"
	"encoding/json"
	"strings"
)

// keyScan finds the upstream's API key in everything the relay hands a caller, fed in pieces as it is
// relayed: an ordinary body at once, an SSE stream event by event, a passed-through body read by read.
// It looks for the whole key only, verbatim or as a JSON encoder escapes it (with and without Go's HTML
// escapes), never for fragments or masks: a successful answer is model output, in which an 8-character
// run of a key or "sk-p..." are ordinary text, so leakCheck's heuristics would refuse honest answers;
// they stay on errors, where an upstream talks about the key it refused.
//
// The scan keeps no copy of what it has seen: a match that spans two pieces starts with a suffix of the
// earlier piece that is a proper prefix of a form, and that suffix is the form's own first q bytes, so
// the length q is the whole state (Knuth-Morris-Pratt's). pending tells a relay that writes read by read
// how many trailing bytes it must hold back: at most the longest form's length minus one.
//
// With no key the scan is off: feed finds nothing and pending is 0, at no cost. A keyScan is reused
// across attempts (it lives in the pooled eventReader): reset rebuilds its tables only when the key
// changes (an attempt without a key keeps them), so a keyed tier's attempts allocate nothing for it.
type keyScan struct {
	on    bool // the attempt has a key
	key   string
	forms []keyForm
}

// keyForm is one byte string the key can travel as, with its matcher state.
type keyForm struct {
	b    []byte
	s    string    // b as a string, for header values
	fail []int32   // fail[i]: the longest proper border of b[:i+1]
	last [4]uint64 // the set of bytes in b[:len(b)-1]: those a pending prefix can end with
	q    int       // the longest suffix of what was fed that is a proper prefix of b
}

// reset prepares the scan for a new attempt with key ("" turns it off).
func (s *keyScan) reset(key string) {
	if s.on = key != ""; !s.on {
		return
	}
	if key != s.key {
		s.key = key
		s.build()
	}
	for i := range s.forms {
		s.forms[i].q = 0
	}
}

func (s *keyScan) build() {
	s.forms = s.forms[:0]
	s.add([]byte(s.key))
	html, _ := json.Marshal(s.key) // a string always marshals
	s.add(html[1 : len(html)-1])
	var plain bytes.Buffer // as most encoders write it: no \u003c for '<'
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s.key)
	b := plain.Bytes() // "...key..."\n
	s.add(b[1 : len(b)-2])
}

// contains reports whether b, a piece that stands alone (a header value), holds the key in any form.
func (s *keyScan) contains(b string) bool {
	if !s.on {
		return false
	}
	for _, f := range s.forms {
		if strings.Contains(b, f.s) {
			return true
		}
	}
	return false
}

// add appends form b unless it is already there.
func (s *keyScan) add(b []byte) {
	for _, f := range s.forms {
		if bytes.Equal(f.b, b) {
			return
		}
	}
	f := keyForm{b: b, s: string(b), fail: make([]int32, len(b))}
	for i, k := 1, int32(0); i < len(b); i++ {
		for k > 0 && b[i] != b[k] {
			k = f.fail[k-1]
		}
		if b[i] == b[k] {
			k++
		}
		f.fail[i] = k
	}
	for _, c := range b[:len(b)-1] {
		f.last[c>>6] |= 1 << (c & 63)
	}
	s.forms = append(s.forms, f)
}

// feed scans the next piece of the relayed bytes and reports whether the key, in any form, now occurs
// in everything fed since reset. Once it has reported true the scan is spent until the next reset.
func (s *keyScan) feed(p []byte) bool {
	if !s.on {
		return false
	}
	for i := range s.forms {
		if s.forms[i].feed(p) {
			return true
		}
	}
	return false
}

// pending is how many trailing bytes of what was fed may still begin the key: a relay that holds them
// back, and writes them only once more bytes show they do not, never sends a byte of the key.
func (s *keyScan) pending() int {
	if !s.on {
		return 0
	}
	n := 0
	for i := range s.forms {
		n = max(n, s.forms[i].q)
	}
	return n
}

func (f *keyForm) feed(p []byte) bool {
	n := len(f.b)
	if f.q > 0 {
		// A match across the boundary continues a border of the pending prefix and ends within the
		// first n-1 bytes of p.
		head := p[:min(len(p), n-1)]
		q := f.q
		for _, c := range head {
			if q = f.step(q, c); q == n {
				return true
			}
		}
		if len(head) == len(p) { // p is shorter than the form: no match inside it, and q is the state
			f.q = q
			return false
		}
	}
	if bytes.Contains(p, f.b) {
		return true
	}
	f.q = f.tail(p)
	return false
}

// tail is the state after p, which holds no match and is at least as long as any pending prefix could
// be or follows a state of 0: the longest suffix of p that is a proper prefix of the form.
func (f *keyForm) tail(p []byte) int {
	if len(p) == 0 {
		return f.q
	}
	if c := p[len(p)-1]; f.last[c>>6]&(1<<(c&63)) == 0 {
		return 0 // the common case: the last byte cannot end a prefix of the form
	}
	q := 0
	for _, c := range p[max(0, len(p)-(len(f.b)-1)):] {
		q = f.step(q, c)
	}
	return q
}

// step advances the matcher from state q (< len(f.b)) by one byte.
func (f *keyForm) step(q int, c byte) int {
	for q > 0 && f.b[q] != c {
		q = int(f.fail[q-1])
	}
	if f.b[q] == c {
		q++
	}
	return q
}
