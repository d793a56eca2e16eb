package capacity_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/capacity"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create %s", path)
	assert.Equal(t, string(want), string(got), "%s differs; rerun with -update if the change is meant", path)
}

// gatherText renders a registry in the Prometheus text format, as /metrics serves it.
func gatherText(t testing.TB, reg prometheus.Gatherer) []byte {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	return b.Bytes()
}

// TestCapacityJSONGolden pins the capacity JSON of a direct, a round-robin and a capacity tier whose
// members are fresh, stale, failed, unknown and malformed, built from fixed snapshots on a fixed clock.
func TestCapacityJSONGolden(t *testing.T) {
	src, plan, _ := fixtureSources(t)
	doc := capacity.Build(plan, src.Admission.Snapshots(), src.Pressure)
	b, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	golden(t, "capacity.json", append(b, '\n'))
}

// TestMetricsGolden pins the Prometheus text of the same fixture.
func TestMetricsGolden(t *testing.T) {
	src, plan, _ := fixtureSources(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(capacity.NewCollector(plan, src))
	golden(t, "metrics.txt", gatherText(t, reg))
}

// TestMetricsLint runs client_golang's promtool-equivalent lint over everything the collector emits.
func TestMetricsLint(t *testing.T) {
	src, plan, _ := fixtureSources(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(capacity.NewCollector(plan, src))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// plainFamiliesOnMain is main's text of the direct and round-robin admission families for the
// fixture, before the strategy-labelled families existed: the spec (T011) keeps these bytes.
const plainFamiliesOnMain = `# HELP anvil_router_member_active_requests Active leases of a member of a round-robin tier.
# TYPE anvil_router_member_active_requests gauge
anvil_router_member_active_requests{member="a",tier="rr"} 1
anvil_router_member_active_requests{member="b",tier="rr"} 1
# HELP anvil_router_member_max_concurrency Configured ceiling of a member of a round-robin tier; absent when it has none.
# TYPE anvil_router_member_max_concurrency gauge
anvil_router_member_max_concurrency{member="a",tier="rr"} 2
# HELP anvil_router_tier_active_requests Active leases of a direct or round-robin tier.
# TYPE anvil_router_tier_active_requests gauge
anvil_router_tier_active_requests{tier="hosted"} 1
anvil_router_tier_active_requests{tier="rr"} 2
# HELP anvil_router_tier_max_concurrency Configured ceiling of a direct or round-robin tier; absent when it has none.
# TYPE anvil_router_tier_max_concurrency gauge
anvil_router_tier_max_concurrency{tier="hosted"} 4
`

// TestPlainFamiliesBytesUnchanged: the lines of anvil_router_{tier,member}_{active_requests,
// max_concurrency} are byte for byte main's (names, labels, HELP, only direct and round-robin
// tiers), whatever families are served beside them.
func TestPlainFamiliesBytesUnchanged(t *testing.T) {
	src, plan, _ := fixtureSources(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(capacity.NewCollector(plan, src))
	plain := map[string]bool{"anvil_router_tier_active_requests": true, "anvil_router_tier_max_concurrency": true,
		"anvil_router_member_active_requests": true, "anvil_router_member_max_concurrency": true}
	var got strings.Builder
	for line := range strings.Lines(string(gatherText(t, reg))) {
		rest := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
		if name, _, _ := strings.Cut(rest, " "); plain[strings.SplitN(name, "{", 2)[0]] {
			got.WriteString(line)
		}
	}
	assert.Equal(t, plainFamiliesOnMain, got.String())
}
