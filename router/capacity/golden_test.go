package capacity_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
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
