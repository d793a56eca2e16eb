package decisionlog

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withUsage is capLine with the usage fields fields (JSON members, comma-led) in their canonical place.
func withUsage(t *testing.T, fields string) string {
	return edit(t, `,"replica_scheduler":`, fields+`,"replica_scheduler":`) + "\n"
}

// TestUsageRoundTrips: a reported usage is written as both fields, read back by the canonical fast
// path and the decoder alike, shown in Line; an unreported one is absent everywhere.
func TestUsageRoundTrips(t *testing.T) {
	for _, u := range []Usage{{}, {Prompt: 12, Completion: 34, Reported: true}, {Reported: true},
		{Prompt: MaxTokens, Completion: MaxTokens, Reported: true}} {
		r := capacityRecord(t)
		r.Usage = u
		line, err := r.JSON()
		require.NoError(t, err)
		assert.Equal(t, u.Reported, bytes.Contains(line, []byte(`"prompt_tokens":`)))
		assert.Equal(t, u.Reported, bytes.Contains(line, []byte(`"completion_tokens":`)))
		got, err := ReadJSONL(bytes.NewReader(append(line, '\n')), 1)
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, u, got[0].Usage)
		dec, err := decodeRecord(line) // the slow path agrees with the fast one
		require.NoError(t, err)
		assert.Equal(t, u, dec.Usage)
		assert.NotContains(t, r.Line(), "_tokens=", "the line keeps its legacy bytes")
	}
}

// TestUsageRefused: the strict reader takes the usage fields together, as non-negative integers up to
// MaxTokens, only beside an attempt, in their place.
func TestUsageRefused(t *testing.T) {
	noAttempt := strings.Replace(strings.Replace(capLine, `"outcome":"success"`, `"outcome":"not_admitted"`, 1), `"attempts":1`, `"attempts":0`, 1)
	for _, tc := range []struct {
		name, line string
		want       error
	}{
		{"prompt alone", withUsage(t, `,"prompt_tokens":1`), ErrInconsistent},
		{"completion alone", withUsage(t, `,"completion_tokens":1`), ErrInconsistent},
		{"negative", withUsage(t, `,"prompt_tokens":-1,"completion_tokens":1`), ErrInvalidValue},
		{"too many", withUsage(t, `,"prompt_tokens":1,"completion_tokens":`+strconv.FormatInt(MaxTokens+1, 10)), ErrInvalidValue},
		{"fraction", withUsage(t, `,"prompt_tokens":1.5,"completion_tokens":1`), ErrWrongType},
		{"exponent", withUsage(t, `,"prompt_tokens":1e3,"completion_tokens":1`), ErrWrongType},
		{"string", withUsage(t, `,"prompt_tokens":"1","completion_tokens":1`), ErrWrongType},
		{"null", withUsage(t, `,"prompt_tokens":null,"completion_tokens":1`), ErrWrongType},
		{"duplicate", withUsage(t, `,"prompt_tokens":1,"prompt_tokens":1,"completion_tokens":1`), ErrDuplicateField},
		{"out of order", withUsage(t, `,"completion_tokens":1,"prompt_tokens":1`), ErrNotCanonical},
		{"out of place", edit(t, `"start":`, `"prompt_tokens":1,"completion_tokens":1,"start":`) + "\n", ErrNotCanonical},
		{"misspelt", withUsage(t, `,"prompt_token":1,"completion_tokens":1`), ErrUnknownField},
		{"without attempt", strings.Replace(noAttempt, `,"replica_scheduler":`, `,"prompt_tokens":1,"completion_tokens":1,"replica_scheduler":`, 1) + "\n", ErrInconsistent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadJSONL(strings.NewReader(tc.line), 1)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// TestUsageInvariants: Log.Add refuses a record whose usage breaks Usage's rules.
func TestUsageInvariants(t *testing.T) {
	for name, mut := range map[string]func(*Record){
		"counts without a report": func(r *Record) { r.Usage = Usage{Prompt: 1} },
		"negative":                func(r *Record) { r.Usage = Usage{Completion: -1, Reported: true} },
		"over the bound":          func(r *Record) { r.Usage = Usage{Prompt: MaxTokens + 1, Reported: true} },
		"without an attempt": func(r *Record) {
			*r = notAdmittedRecord()
			r.Usage = Usage{Reported: true}
		},
	} {
		r := capacityRecord(t)
		mut(&r)
		_, err := r.JSON()
		assert.ErrorIs(t, err, ErrInvalidRecord, name)
	}
}
