package decisionlog_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// The record docs/OPERATIONS.md shows under "Reading a record" is one the strict reader accepts:
// the documentation's example is a real record, field for field.
func TestOperationsExampleRecordIsValid(t *testing.T) {
	data, err := os.ReadFile("../../docs/OPERATIONS.md")
	require.NoError(t, err)
	doc := string(data)
	i := strings.Index(doc, "### Reading a record")
	require.GreaterOrEqual(t, i, 0, "OPERATIONS.md has the section")
	rest := doc[i:]
	start := strings.Index(rest, "```json\n")
	require.GreaterOrEqual(t, start, 0, "the section shows a JSON record")
	body := rest[start+len("```json\n"):]
	body = body[:strings.Index(body, "```")]
	var line strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		line.WriteString(strings.TrimSpace(l))
	}
	recs, err := decisionlog.ReadJSONL(strings.NewReader(line.String()+"\n"), 10)
	require.NoError(t, err, "the example: %s", line.String())
	require.Len(t, recs, 1)
	assert.Equal(t, decisionlog.OutcomeSuccess, recs[0].Outcome)
}
