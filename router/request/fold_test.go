package request

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/anvil-llm/anvil/internal/jsonscan"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzDecodeString: decodeString agrees with json.Unmarshal into a string (the scanner's own decoding
// is held to it in internal/jsonscan).
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"\u00e9"`, `"\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`,
		`"\ud800\ud800\udc00"`, "\"a\xffb\"", "\"\xe2\x82\"", `"\"\\\/\b\f\n\r\t"`, "\"\xef\xbf\xbd\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		if len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &want) != nil {
			return
		}
		end, flags, err := jsonscan.String(b, 0)
		require.NoError(t, err)
		assert.Equal(t, want, decodeString(b[1:end-1], flags))
	})
}

// TestFoldsToIsSimpleFolding checks foldsTo against Unicode's simple case folding for every rune and
// every byte a field name holds (lowercase letters, digits and the underscore): ASCII runes against
// bytes.EqualFold, every other rune by walking its unicode.SimpleFold orbit (what strings.EqualFold
// and encoding/json consult).
func TestFoldsToIsSimpleFolding(t *testing.T) {
	const names = "abcdefghijklmnopqrstuvwxyz0123456789_"
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		ascii := rune(-1) // the lowercase ASCII member of r's fold orbit, if any
		for f := unicode.SimpleFold(r); f != r && r >= utf8.RuneSelf; f = unicode.SimpleFold(f) {
			if f < utf8.RuneSelf {
				ascii = unicode.ToLower(f) // names are lowercase
			}
		}
		for i := range len(names) {
			c := names[i]
			want := ascii == rune(c)
			if r < utf8.RuneSelf {
				want = bytes.EqualFold([]byte{byte(r)}, []byte{c})
			}
			if want != foldsTo(r, c) {
				t.Fatalf("foldsTo(%q, %q) = %v, Unicode says %v", r, c, !want, want)
			}
		}
	}
}

func FuzzEqualFold(f *testing.F) {
	f.Add("MAX_TOKENS", uint8(3))
	f.Add("max_to\u212aens", uint8(3))
	f.Add("me\u017f\u017fages", uint8(8))
	f.Fuzz(func(t *testing.T, key string, which uint8) {
		name := fieldNames[int(which)%len(fieldNames)]
		assert.Equal(t, strings.EqualFold(key, name), equalFold([]byte(key), name), "%q vs %q", key, name)
	})
}
