package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/sim/calibrate"
)

// calibrate prints the table and the recommendation and writes the same report as JSON and
// Markdown, and the plot; a second run writes the same bytes.
func TestCalibrateWritesEveryFormatDeterministically(t *testing.T) {
	outputs := func() (string, [2][]byte) {
		dir := t.TempDir()
		js, md := filepath.Join(dir, "c.json"), filepath.Join(dir, "c.md")
		code, out, errOut := runCLI(t, "calibrate", "--profile", "tiny", "--workload", "decisive-unknown",
			"--slo", "ttft=50ms", "--json", js, "--markdown", md, "--plots", filepath.Join(dir, "plots"))
		require.Equal(t, 0, code, errOut)
		assert.FileExists(t, filepath.Join(dir, "plots", "tiny-calibration.png"))
		assert.FileExists(t, filepath.Join(dir, "plots", "tiny-calibration.svg"))
		a, err := os.ReadFile(js)
		require.NoError(t, err)
		b, err := os.ReadFile(md)
		require.NoError(t, err)
		return out, [2][]byte{a, b}
	}
	out1, files1 := outputs()
	out2, files2 := outputs()
	assert.Equal(t, out1, out2)
	assert.Equal(t, files1, files2)
	assert.Contains(t, out1, "Recommended max_concurrency:")
	var r calibrate.Report
	require.NoError(t, json.Unmarshal(files1[0], &r))
	assert.Equal(t, calibrate.Format, r.Format)
	assert.Equal(t, "decisive-unknown", r.Workload)
	assert.Len(t, r.Points, 10, "1 to a quarter past tiny's 8 sequences")
	assert.Positive(t, r.Recommendation.MaxConcurrency)
	assert.Contains(t, string(files1[1]), "| ceiling |")
}

func TestCalibrateSweepFlags(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "c.json")
	code, _, errOut := runCLI(t, "calibrate", "--profile", "tiny", "--workload", "decisive-unknown", "--max-ceiling", "9",
		"--step", "4", "--window", "500ms", "--max-windows", "5", "--json", js)
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(js)
	require.NoError(t, err)
	var r calibrate.Report
	require.NoError(t, json.Unmarshal(data, &r))
	var got []int
	for _, p := range r.Points {
		got = append(got, p.Ceiling)
	}
	assert.Equal(t, []int{1, 4, 8, 9}, got)
	assert.Equal(t, 5, r.MaxWindows)
}

func TestCalibrateRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no workload", []string{"calibrate"}, "--workload is required"},
		{"bad slo", []string{"calibrate", "--workload", "rotation", "--slo", "ttft=soon-secret"}, "--slo: invalid SLO"},
		{"unknown profile", []string{"calibrate", "--workload", "rotation", "--profile", "h200"}, "--profile: unknown profile"},
		{"unknown workload", []string{"calibrate", "--workload", "nowhere"}, "neither a scenario file nor an embedded scenario"},
		{"ceiling too high", []string{"calibrate", "--workload", "rotation", "--max-ceiling", "5000"}, "--max-ceiling must be"},
		{"too long for the profile", []string{"calibrate", "--workload", "heterogeneous", "--profile", "tiny"}, "max_model_len"},
		{"tolerance", []string{"calibrate", "--workload", "rotation", "--tolerance", "2"}, "tolerance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, tc.want)
			assert.NotContains(t, errOut, "soon-secret", "a refused SLO is not echoed")
		})
	}
}
