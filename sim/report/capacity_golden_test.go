package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// goldenPath holds, per embedded scenario, the SHA-256 of the JSON report of its capacity run
// (first goldenWindow of it), as the simulator produced it before reference policies existed
// (commit a6e67c8); the five scenarios added with them (bursty-arrivals, outside-load, prompt-mix,
// sixteen-members, unequal-speed) as main produced them at bd56474; the four engine-* scenarios of
// issue 28 as main produced them at 3db72ce. Regenerate it only on purpose: ANVIL_UPDATE_GOLDEN=1 go test -run
// TestCapacityRunUnchanged ./sim/report/.
const goldenPath = "testdata/capacity-golden.json"

// goldenWindow keeps the test short: an hour-long scenario is checked over its first minutes.
const goldenWindow = 2 * time.Minute

// The capacity scheduler's numbers are unchanged by the reference policies: the capacity run of
// every embedded scenario produces, byte for byte, the report it produced before they existed.
func TestCapacityRunUnchanged(t *testing.T) {
	got := map[string]string{}
	for _, name := range scenarios.Names() {
		sc := lookup(t, name)
		if !slices.Contains(sc.Strategies, scenarios.StrategyCapacity) {
			continue
		}
		sc.Duration = min(sc.Duration, goldenWindow)
		r, err := sim.Run(sc, sim.Options{Strategy: scenarios.StrategyCapacity})
		require.NoError(t, err, name)
		var b bytes.Buffer
		require.NoError(t, Build(sc, []*sim.Result{r}).WriteJSON(&b))
		sum := sha256.Sum256(b.Bytes())
		got[name] = hex.EncodeToString(sum[:])
	}
	if os.Getenv("ANVIL_UPDATE_GOLDEN") == "1" {
		data, err := json.MarshalIndent(got, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(goldenPath, append(data, '\n'), 0o644))
		return
	}
	data, err := os.ReadFile(goldenPath)
	require.NoError(t, err)
	var want map[string]string
	require.NoError(t, json.Unmarshal(data, &want))
	require.ElementsMatch(t, slices.Collect(maps.Keys(want)), slices.Collect(maps.Keys(got)),
		"every embedded scenario with a capacity run has a golden, and only those")
	for name, sum := range want {
		require.Equal(t, sum, got[name], "capacity report of %s changed", name)
	}
}
