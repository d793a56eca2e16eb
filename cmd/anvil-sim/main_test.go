package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/scenarios"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// shortScenarios copies the shipped scenarios that finish in well under a second into a fresh
// directory (the hour and the ten-minute comparison run in `make test`'s full check instead).
func shortScenarios(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join("..", "..", "scenarios", n+".yaml"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, n+".yaml"), data, 0o644))
	}
	return dir
}

func TestCheckPasses(t *testing.T) {
	dir := shortScenarios(t, "twenty-concurrent", "rotation", "decisive-unknown")
	code, out, errOut := runCLI(t, "check", dir)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "ok   twenty-concurrent")
	assert.Contains(t, out, "ok   rotation")
	assert.Contains(t, out, "wall clock:")
}

func TestCheckFailsOnABrokenGate(t *testing.T) {
	dir := shortScenarios(t, "rotation")
	src, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "twenty-concurrent.yaml"))
	require.NoError(t, err)
	broken := strings.Replace(string(src), `{metric: tier.peak_active, op: "==", value: 6}`,
		`{metric: tier.peak_active, op: "==", value: 7}`, 1)
	require.NotEqual(t, string(src), broken, "the gate to break is in the file")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "twenty-concurrent.yaml"), []byte(broken), 0o644))
	code, out, errOut := runCLI(t, "check", "-v", dir)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, out, "FAIL twenty-concurrent")
	assert.Contains(t, out, "ok   rotation", "the other scenarios still run")
	assert.Contains(t, out, "tier.peak_active == 7")
	assert.Contains(t, errOut, "1 of 2 scenarios failed")
}

func TestCheckRefusesInvalidScenario(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("name: bad\nduration: 1s\ncolour: red\n"), 0o644))
	code, _, errOut := runCLI(t, "check", dir)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "colour: unknown key")
}

func TestCheckEmptyDir(t *testing.T) {
	code, _, errOut := runCLI(t, "check", t.TempDir())
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "no *.yaml")
}

func TestRunWritesEveryOutput(t *testing.T) {
	dir := t.TempDir()
	jsonPath, mdPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md")
	plots, decisions := filepath.Join(dir, "plots"), filepath.Join(dir, "d.jsonl")
	code, out, errOut := runCLI(t, "run", "twenty-concurrent", "--json", jsonPath, "--markdown", mdPath,
		"--plots", plots, "--decisions", decisions)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "anvil-sim: twenty-concurrent")
	assert.Contains(t, out, "Verdict: PASS")
	assert.Contains(t, out, "wall clock:")

	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, true, doc["passed"])
	md, err := os.ReadFile(mdPath)
	require.NoError(t, err)
	assert.Contains(t, string(md), "# anvil-sim: twenty-concurrent")
	for _, f := range []string{"twenty-concurrent-capacity-active.png", "twenty-concurrent-capacity-active.svg",
		"twenty-concurrent-latency-cdf.png", "twenty-concurrent-latency-cdf.svg"} {
		info, err := os.Stat(filepath.Join(plots, f))
		require.NoError(t, err, f)
		assert.Positive(t, info.Size())
	}
	f, err := os.Open(decisions)
	require.NoError(t, err)
	defer f.Close()
	recs, err := decisionlog.ReadJSONL(f, decisionlog.MaxReadRecords)
	require.NoError(t, err, "the decision file is exactly what the router's sink writes")
	assert.NotEmpty(t, recs)
}

func TestRunFromFileWithSeedOverride(t *testing.T) {
	dir := shortScenarios(t, "rotation")
	path := filepath.Join(dir, "rotation.yaml")
	report := func(name string, extra ...string) []byte {
		t.Helper()
		out := filepath.Join(dir, name)
		code, stdout, errOut := runCLI(t, append([]string{"run", path, "--quiet", "--json", out}, extra...)...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, stdout, "rotation: PASS")
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		return data
	}
	a, b, c := report("1.json"), report("2.json"), report("3.json", "--seed", "99")
	assert.Equal(t, a, b, "same seed, byte-identical report")
	assert.NotEqual(t, a, c, "another seed, another report")
}

func TestRunUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"run"}, "accepts 1 arg"},
		{[]string{"run", "no-such-scenario"}, "neither a scenario file nor an embedded scenario"},
		{[]string{"run", "rotation", "--bogus"}, "unknown flag"},
		{[]string{"compare", "rotation", "--strategies", "capacity"}, "needs two strategies"},
		{[]string{"compare", "rotation", "--strategies", "capacity,fastest"}, "not round_robin or capacity"},
		{[]string{"compare", "rotation", "--strategies", "capacity,capacity"}, "listed twice"},
		{[]string{"check", "a", "b"}, "accepts at most 1 arg"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errOut := runCLI(t, c.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, c.msg)
		})
	}
}

func TestCompare(t *testing.T) {
	code, out, errOut := runCLI(t, "compare", "decisive-unknown", "--strategies", "round_robin,capacity")
	// decisive-unknown's gates name the capacity run, which is present; they pass.
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Run: round_robin")
	assert.Contains(t, out, "Run: capacity")
	assert.Contains(t, out, "Comparison")
	assert.Contains(t, out, "ratio")
}

func TestList(t *testing.T) {
	code, out, _ := runCLI(t, "list")
	require.Equal(t, 0, code)
	for _, n := range scenarios.Names() {
		assert.Contains(t, out, n)
	}
}

func TestProgressBarAfterOneSecond(t *testing.T) {
	var out bytes.Buffer
	p := &progress{out: &out, label: "sixteen-members-hour capacity", enabled: true, start: time.Now().Add(-2 * time.Second)}
	for i := range 11 {
		p.update(time.Duration(i)*6*time.Minute, time.Hour)
	}
	require.NotNil(t, p.bar, "a run past one second gets a bar")
	assert.Equal(t, int64(3600_000), p.total, "milliseconds of virtual time")
	assert.Equal(t, int64(3600_000), p.bar.Current())
	p.finish()
	assert.True(t, p.bar.Completed())

	quiet := &progress{out: &out, enabled: true, start: time.Now()}
	quiet.update(time.Minute, time.Hour)
	assert.Nil(t, quiet.bar, "no bar during the first second")
	quiet.finish()

	assert.False(t, newProgress(&out, "x", true).enabled, "never on a non-terminal")
}

// noCeilings is a round-robin tier without member ceilings: valid for round robin, refused by the
// router config for capacity.
const noCeilings = `name: no-ceilings
duration: 5s
strategies: [round_robin, capacity]
tier:
  strategy: round_robin
  members:
    - {id: a}
    - {id: b}
workload:
  closed: {clients: 2}
  prompt_tokens: {dist: constant, value: 16}
  output_tokens: {dist: constant, value: 8}
`

// TestCheckRefusesRouterInvalidScenarioBeforeAnyRun: what the router config refuses surfaces at
// load time as a usage error naming the file and strategy, before the first scenario runs.
func TestCheckRefusesRouterInvalidScenarioBeforeAnyRun(t *testing.T) {
	dir := shortScenarios(t, "rotation") // sorts before the bad file, so it would run first
	bad := filepath.Join(dir, "zz-no-ceilings.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(noCeilings), 0o644))
	code, out, errOut := runCLI(t, "check", dir)
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out, "nothing ran")
	assert.Contains(t, errOut, bad+": strategy capacity:")
	assert.Contains(t, errOut, "max_concurrency: is required in capacity mode")
}

func TestLoadTimeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
		return path
	}
	rrOnly := write("rr.yaml", strings.Replace(noCeilings, "strategies: [round_robin, capacity]\n", "", 1))
	typo := write("typo.yaml", strings.Replace(noCeilings, "strategies: [round_robin, capacity]\n", "", 1)+
		"expect: [{metric: tier.peak_actve, op: \"==\", value: 1}]\n")
	huge := write("huge.yaml", strings.Replace(strings.Replace(noCeilings, "closed: {clients: 2}", "open: {process: poisson, rate: 100000}", 1),
		"duration: 5s", "duration: 24h", 1))
	timeouts := write("timeouts.yaml", strings.Replace(noCeilings, "strategies: [round_robin, capacity]\n",
		"upstream: {first_byte_timeout: 2m, timeout: 1m}\n", 1))
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"run", rrOnly, "--quiet"}, ""}, // valid as a round-robin run
		{[]string{"compare", rrOnly, "--strategies", "round_robin,capacity"}, rrOnly + ": strategy capacity:"},
		{[]string{"run", typo}, typo + ": scenario: expect[0].metric: names no report metric"},
		{[]string{"run", huge}, "workload: would send more than 50000000 requests"},
		{[]string{"run", timeouts}, "upstream.first_byte_timeout: must not exceed upstream.timeout"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[:2], " "), func(t *testing.T) {
			code, _, errOut := runCLI(t, c.args...)
			if c.msg == "" {
				assert.Equal(t, 0, code, errOut)
				return
			}
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, c.msg)
		})
	}
}
