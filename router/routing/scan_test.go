package routing

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// valid is the scanner's whole-document decision, to compare with json.Valid.
func valid(b []byte) bool {
	end, err := skipValue(b, 0, 0)
	return err == nil && skipSpace(b, end) == len(b)
}

func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	cases := []string{
		``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `[,1]`, `{"a" 1}`, `{"a":}`, `{1:2}`, `"x"`, `"\q"`,
		`"\u12"`, `"\u12g4"`, `"\ud800"`, "\"\x01\"", "\"\x7f\"", "\"\xff\"", `tru`, `true`, `truex`, `nul`, `null`,
		`-`, `-0`, `-01`, `01`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1e+5`, `1E-5`, `0.0e0`, `[1 2]`, `{"a":1 "b":2}`,
		`{"a":[{"b":[]}],"c":{}}`, ` {"a" : [ 1 , 2 ] } `, `{} {}`, `{}]`, `[}`, `{]`, `[[[]]`, "\t[\n1\r]\n",
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
		strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	}
	for _, c := range cases {
		assert.Equal(t, json.Valid([]byte(c)), valid([]byte(c)), "%.40q", c)
	}
}

func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00"}`, `[1,]`, `{"a":1e5,"b":-0.5}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		require.Equal(t, json.Valid(b), valid(b))
	})
}

// FuzzStringDecoding: decodedLen and decodeString agree with json.Unmarshal into a string.
func FuzzStringDecoding(f *testing.F) {
	for _, s := range []string{`"abc"`, `"\u00e9"`, `"\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`,
		`"\ud800\ud800\udc00"`, "\"a\xffb\"", "\"\xe2\x82\"", `"\"\\\/\b\f\n\r\t"`, "\"\xef\xbf\xbd\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		if len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &want) != nil {
			return
		}
		end, flags, err := scanString(b, 0)
		require.NoError(t, err)
		require.Equal(t, len(b), skipSpace(b, end))
		raw := b[1 : end-1]
		assert.Equal(t, int64(len(want)), decodedLen(raw, flags))
		assert.Equal(t, want, decodeString(raw, flags))
		var buf [maxKeyBytes]byte
		if got, ok := decodeSmall(raw, flags, buf[:]); ok {
			assert.Equal(t, want, string(got))
		} else {
			assert.Greater(t, len(want), maxKeyBytes)
		}
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
