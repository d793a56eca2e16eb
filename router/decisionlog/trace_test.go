package decisionlog

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sampleTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"

// TestReadJSONLTraceID: the optional trace_id is read by both parsers in its canonical place (after
// caller, before the usage and the evidence) and written back there, but never shown in the line,
// whose legacy bytes the spec fixes; out of its grammar, empty or out of place it is refused.
func TestReadJSONLTraceID(t *testing.T) {
	line := edit(t, `,"replica_scheduler":`, `,"caller":"team-a","trace_id":"`+sampleTraceID+`","replica_scheduler":`) + "\n"
	recs, err := ReadJSONL(strings.NewReader(line), 1)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, sampleTraceID, recs[0].TraceID)
	fast, ok := scanCanonical([]byte(strings.TrimSuffix(line, "\n")))
	require.True(t, ok, "the fast path reads the field")
	assert.Equal(t, sampleTraceID, fast.TraceID)
	js, err := recs[0].JSON()
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(line, "\n"), string(js))
	without := recs[0]
	without.TraceID = ""
	assert.Equal(t, without.Line(), recs[0].Line(), "the line keeps its legacy bytes")
	for name, tc := range map[string]struct {
		value string
		want  error
	}{
		"upper case": {`"` + strings.ToUpper(sampleTraceID) + `"`, ErrInvalidValue},
		"zeros":      {`"` + strings.Repeat("0", 32) + `"`, ErrInvalidValue},
		"short":      {`"` + sampleTraceID[:31] + `"`, ErrInvalidValue},
		"empty":      {`""`, ErrInvalidValue},
		"number":     {`7`, ErrWrongType},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadJSONL(strings.NewReader(edit(t, `,"replica_scheduler":`, `,"trace_id":`+tc.value+`,"replica_scheduler":`)+"\n"), 1)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, err = ReadJSONL(strings.NewReader(edit(t, `,"replica_scheduler":`, `,"trace_id":"`+sampleTraceID+`","caller":"a","replica_scheduler":`)+"\n"), 1)
	assert.ErrorIs(t, err, ErrNotCanonical, "out of place")
}

// TestAddDropsATraceIDOutOfGrammar: Log.Add keeps a valid trace ID and drops one out of the grammar.
func TestAddDropsATraceIDOutOfGrammar(t *testing.T) {
	for in, want := range map[string]string{sampleTraceID: sampleTraceID, strings.ToUpper(sampleTraceID): "",
		"not-a-trace": "", strings.Repeat("0", 32): "", "": ""} {
		r := sampleRecords(t)[0]
		r.TraceID = in
		js, err := r.JSON()
		require.NoError(t, err)
		if want == "" {
			assert.NotContains(t, string(js), `"trace_id":`, in)
		} else {
			assert.Contains(t, string(js), `"trace_id":"`+want+`"`, in)
		}
	}
}
