package intent_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/intent"
)

// The tier-only form, byte for byte: a document without member intent has no "members" key.
const tierOnly = "{\n  \"tiers\": {\n    \"replicas\": \"maintenance\"\n  }\n}\n"

const withMembers = "{\n  \"tiers\": {},\n  \"members\": {\n    \"replicas\": {\n      \"m00\": \"upgrade\",\n      \"m01\": \"promotion\"\n    }\n  }\n}\n"

func TestDecodeAcceptsLiteralDocuments(t *testing.T) {
	cases := []struct {
		name, doc string
		want      intent.Document
	}{
		{"tier-only form", tierOnly, intent.Document{Tiers: map[string]string{"replicas": "maintenance"}}},
		{"members", withMembers, intent.Document{Tiers: map[string]string{},
			Members: map[string]map[string]string{"replicas": {"m00": "upgrade", "m01": "promotion"}}}},
		{"compact, both", `{"members":{"t":{"m":"r"}},"tiers":{"u":"x"}}`, intent.Document{Tiers: map[string]string{"u": "x"},
			Members: map[string]map[string]string{"t": {"m": "r"}}}},
		{"empty object", `{}`, intent.Document{}},
		{"empty tier map in members", `{"members":{"t":{}}}`, intent.Document{Members: map[string]map[string]string{"t": {}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := intent.Decode([]byte(c.doc))
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestEncodeIsCanonical(t *testing.T) {
	assert.Equal(t, tierOnly, string(intent.Encode(intent.Document{Tiers: map[string]string{"replicas": "maintenance"}})))
	assert.Equal(t, tierOnly, string(intent.Encode(intent.Document{Tiers: map[string]string{"replicas": "maintenance"},
		Members: map[string]map[string]string{"replicas": {}}})), "empty member maps leave the tier-only bytes")
	assert.Equal(t, withMembers, string(intent.Encode(intent.Document{
		Members: map[string]map[string]string{"replicas": {"m01": "promotion", "m00": "upgrade"}}})))
	assert.Equal(t, "{\n  \"tiers\": {}\n}\n", string(intent.Encode(intent.Document{})))
}

func TestDecodeRefusesMalformedDocuments(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"empty", ``, "the document is empty"},
		{"blank", " \n", "the document is empty"},
		{"null", `null`, "null where an object"},
		{"list", `[]`, "not one JSON object"},
		{"string", `"tiers"`, "not one JSON object"},
		{"truncated", `{"tiers":{`, "malformed JSON"},
		{"trailing object", `{} {}`, "data after the JSON object"},
		{"trailing garbage", `{"tiers":{}}x`, "data after the JSON object"},
		{"unknown key", `{"tier":{}}`, "unknown key"},
		{"duplicate top key", `{"tiers":{},"tiers":{}}`, "a key appears twice"},
		{"duplicate tier", `{"tiers":{"a":"x","a":"y"}}`, "a key appears twice"},
		{"duplicate member tier", `{"members":{"a":{},"a":{}}}`, "a key appears twice"},
		{"duplicate member", `{"members":{"a":{"m":"x","m":"x"}}}`, "a key appears twice"},
		{"tiers null", `{"tiers":null}`, "null where"},
		{"members null", `{"members":null}`, "null where"},
		{"member map null", `{"members":{"t":null}}`, "null where"},
		{"reason null", `{"tiers":{"t":null}}`, "null where"},
		{"member reason null", `{"members":{"t":{"m":null}}}`, "null where"},
		{"tiers list", `{"tiers":["t"]}`, "where an object belongs"},
		{"members list", `{"members":[]}`, "where an object belongs"},
		{"member map list", `{"members":{"t":["m"]}}`, "where an object belongs"},
		{"tiers string", `{"tiers":"t"}`, "where an object belongs"},
		{"reason number", `{"tiers":{"t":1}}`, "where a reason code belongs"},
		{"reason bool", `{"tiers":{"t":true}}`, "where a reason code belongs"},
		{"reason object", `{"tiers":{"t":{"reason":"x"}}}`, "where a reason code belongs"},
		{"reason list", `{"members":{"t":{"m":["x"]}}}`, "where a reason code belongs"},
		{"nested state object", `{"members":{"t":{"m":{"state":"quiesced"}}}}`, "where a reason code belongs"},
		{"empty reason", `{"tiers":{"t":""}}`, "not a valid reason code"},
		{"upper reason", `{"tiers":{"t":"Upgrade"}}`, "not a valid reason code"},
		{"long reason", `{"tiers":{"t":"` + strings.Repeat("r", 65) + `"}}`, "not a valid reason code"},
		{"bad tier ID", `{"tiers":{"Bad Tier":"x"}}`, "not a valid tier ID"},
		{"empty tier ID", `{"tiers":{"":"x"}}`, "not a valid tier ID"},
		{"address tier ID", `{"members":{"10.0.0.5":{"m":"x"}}}`, "not a valid tier ID"},
		{"bad member ID", `{"members":{"t":{"../etc":"x"}}}`, "not a valid member ID"},
		{"address member ID", `{"members":{"t":{"10.0.0.5":"x"}}}`, "not a valid member ID"},
		{"oversized", `{"tiers":{}}` + strings.Repeat(" ", ident.MaxDocumentBytes), "larger than 1 MiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := intent.Decode([]byte(c.doc))
			require.Error(t, err)
			assert.ErrorIs(t, err, intent.ErrInvalid)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "Bad Tier", "a refusal never echoes the document")
			assert.NotContains(t, err.Error(), "10.0.0.5")
		})
	}
}

func TestEmpty(t *testing.T) {
	assert.True(t, intent.Document{}.Empty())
	assert.True(t, intent.Document{Members: map[string]map[string]string{"t": {}}}.Empty())
	assert.False(t, intent.Document{Tiers: map[string]string{"t": "x"}}.Empty())
}
