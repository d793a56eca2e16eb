package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
	"github.com/anvil-llm/anvil/sim/policy"
)

// A ratio to a run that is not in the comparison is missing, not 0: "-" in the table and the
// Markdown, absent from the JSON. The ratios that exist are still there.
func TestPolicyRatiosMissingWithoutTheirRun(t *testing.T) {
	sc := lookup(t, "heterogeneous")
	sc.Duration = 20 * time.Second
	var results []*sim.Result
	for _, opts := range []sim.Options{{Strategy: scenarios.StrategyCapacity}, {Policy: policy.Random}} {
		r, err := sim.Run(sc, opts)
		require.NoError(t, err)
		results = append(results, r)
	}
	r := Policies(sc, results)
	for _, row := range r.Rows {
		assert.Nil(t, row.GoodputVsOracle, row.Policy)
		assert.Nil(t, row.E2EP99VsOracle, row.Policy)
		require.NotNil(t, row.GoodputVsCapacity, row.Policy)
		require.NotNil(t, row.E2EP99VsCapacity, row.Policy)
	}
	assert.Equal(t, 1.0, *r.Rows[0].GoodputVsCapacity)

	var b bytes.Buffer
	require.NoError(t, r.WriteJSON(&b))
	var doc struct {
		Policies []map[string]any `json:"policies"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	for _, row := range doc.Policies {
		assert.NotContains(t, row, "goodput_vs_oracle")
		assert.NotContains(t, row, "e2e_p99_vs_oracle")
		assert.Contains(t, row, "goodput_vs_capacity")
	}

	for _, out := range []string{r.Text(), r.Markdown()} {
		assert.NotContains(t, out, "0.000", "no missing ratio printed as 0")
		line := rowLine(t, out, "random")
		cells := strings.Fields(strings.ReplaceAll(line, "|", " "))
		// policy, goodput/s, vs cap, vs oracle, ... e2e p99 s, p99 vs cap, p99 vs oracle, ...
		require.Len(t, cells, 16, line)
		assert.NotEqual(t, "-", cells[2], "vs cap")
		assert.Equal(t, "-", cells[3], "vs oracle")
		assert.NotEqual(t, "-", cells[10], "p99 vs cap")
		assert.Equal(t, "-", cells[11], "p99 vs oracle")
	}
}

// rowLine returns the first line of out whose first cell is policy.
func rowLine(t *testing.T, out, policy string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(strings.TrimLeft(l, "| ")); len(f) > 0 && f[0] == policy {
			return l
		}
	}
	t.Fatalf("no row for %s in\n%s", policy, out)
	return ""
}
