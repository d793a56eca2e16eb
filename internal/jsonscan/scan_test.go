package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
		assert.Equal(t, json.Valid([]byte(c)), Valid([]byte(c)), "%.40q", c)
	}
}

// The depth a caller passes counts: a value opened inside depth containers may nest MaxDepth-depth
// levels more, as a nested call of encoding/json's scanner would.
func TestDepthCountsTheCallersContainers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		depth int
		doc   string
		ok    bool
	}{
		{"at the bound", MaxDepth - 1, "[]", true},
		{"past the bound", MaxDepth, "[]", false},
		{"scalar at the bound", MaxDepth, "1", true},
		{"object past the bound", MaxDepth, "{}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Skip([]byte(tc.doc), 0, tc.depth)
			assert.Equal(t, tc.ok, err == nil, "%v", err)
			_, err = EachElement([]byte("[]"), 0, tc.depth+len(tc.doc)-2, func(j int) (int, error) { return j, nil })
			if tc.doc != "1" {
				assert.Equal(t, tc.ok, err == nil, "%v", err)
			}
		})
	}
}

func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00"}`, `[1,]`, `{"a":1e5,"b":-0.5}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		require.Equal(t, json.Valid(b), Valid(b))
	})
}

// smallBytes is the decode buffer of the string-decoding fuzz test, the size of the router's key buffer.
const smallBytes = 64

// FuzzStringDecoding: DecodedLen, DecodeSmall and Unescape agree with json.Unmarshal into a string.
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
		end, flags, err := String(b, 0)
		require.NoError(t, err)
		require.Equal(t, len(b), SkipSpace(b, end))
		raw := b[1 : end-1]
		assert.Equal(t, int64(len(want)), DecodedLen(raw, flags))
		var all []byte
		Unescape(raw, func(r rune) bool { all = utf8.AppendRune(all, r); return true })
		assert.Equal(t, want, string(all))
		var buf [smallBytes]byte
		if got, ok := DecodeSmall(raw, flags, buf[:]); ok {
			assert.Equal(t, want, string(got))
		} else {
			assert.Greater(t, len(want), smallBytes)
		}
	})
}
