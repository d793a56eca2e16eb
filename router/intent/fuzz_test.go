package intent_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/intent"
)

// FuzzDecode: Decode never panics; a document it accepts encodes canonically, and the canonical
// bytes decode to the same intent and encode to themselves.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{tierOnly, withMembers, `{}`, `{"tiers":{"a":"b"},"members":{"a":{"m":"r"}}}`,
		`{"tiers":{"a":"b","a":"c"}}`, `{"members":{"t":null}}`, `{"tiers":{}} x`, `[1,2]`, `{"tiers":{"10.0.0.1":"x"}}`,
		"{\"tiers\":{\"a\":\"\xff\"}}", `{"members":{"t":{"m":{"x":1}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := intent.Decode(data)
		if err != nil {
			assert.ErrorIs(t, err, intent.ErrInvalid)
			return
		}
		canon := intent.Encode(doc)
		again, err := intent.Decode(canon)
		require.NoError(t, err, "canonical bytes decode")
		assert.True(t, bytes.Equal(canon, intent.Encode(again)), "canonical bytes are a fixed point")
		assert.Equal(t, doc.Empty(), again.Empty())
	})
}
