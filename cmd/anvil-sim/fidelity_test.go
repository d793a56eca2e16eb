package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/sim/fidelity"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// The known bench results are real anvil-bench runs of twenty-concurrent for 10 s (seed 20), one
// per strategy, against anvil-fakevllm members behind anvil-router (bench/sim-vs-real.sh).
var (
	benchRR       = filepath.Join("testdata", "bench-twenty-concurrent-10s-round_robin.json")
	benchCapacity = filepath.Join("testdata", "bench-twenty-concurrent-10s-capacity.json")
)

// withoutWall drops the wall-clock line, the one line of the output that is not deterministic.
func withoutWall(out string) string {
	var keep []string
	for _, l := range strings.SplitAfter(out, "\n") {
		if !strings.HasPrefix(l, "wall clock:") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// TestCompareBenchKnownTable: known bench results beside the simulation of the same scenario, seed
// and 10 s window give exactly the golden table, in text, Markdown and JSON; a figure outside its
// bound makes the command exit 1.
func TestCompareBenchKnownTable(t *testing.T) {
	dir := t.TempDir()
	jsonPath, mdPath := filepath.Join(dir, "f.json"), filepath.Join(dir, "f.md")
	code, out, errOut := runCLI(t, "compare", "--bench", benchRR, "--bench", benchCapacity, "--json", jsonPath, "--markdown", mdPath)
	golden := filepath.Join("testdata", "compare-bench.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(withoutWall(out)), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), withoutWall(out))
	assert.Contains(t, out, "wall clock:")

	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var r fidelity.Report
	require.NoError(t, json.Unmarshal(data, &r))
	assert.Equal(t, fidelity.Format, r.Format)
	assert.Equal(t, "twenty-concurrent", r.Scenario)
	assert.Equal(t, uint64(20), r.Seed)
	assert.Equal(t, 10.0, r.WindowS)
	require.Len(t, r.Runs, 2)
	assert.Equal(t, "round_robin", r.Runs[0].Strategy)
	assert.Equal(t, 72, r.Runs[1].Real.Succeeded)
	md, err := os.ReadFile(mdPath)
	require.NoError(t, err)
	assert.Contains(t, string(md), "## anvil-sim compare: twenty-concurrent, seed 20, 10 s of arrivals")

	if r.Passed {
		assert.Equal(t, 0, code, errOut)
	} else {
		assert.Equal(t, exitFailure, code)
		assert.Contains(t, errOut, "figures outside their bounds")
	}

	// The scenario named explicitly, embedded or as a file, is the same comparison.
	for _, arg := range []string{"twenty-concurrent", filepath.Join("..", "..", "scenarios", "twenty-concurrent.yaml")} {
		_, again, _ := runCLI(t, "compare", arg, "--bench", benchRR, "--bench", benchCapacity)
		assert.Equal(t, withoutWall(out), withoutWall(again), arg)
	}
}

func TestCompareBenchRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		return path
	}
	rr, err := os.ReadFile(benchRR)
	require.NoError(t, err)
	broken := write("broken.json", strings.Replace(string(rr), `"completed": 70`, `"completed": 71`, 1))
	noScenario := write("none.json", strings.Replace(string(rr), `"scenario": "twenty-concurrent",`, "", 1))
	other := write("other-label.json", strings.Replace(string(rr), `"label": "round_robin"`, `"label": "rr"`, 1))
	cases := []struct {
		name string
		args []string
		msg  string
	}{
		{"other seed", []string{"--bench", benchRR, "--seed", "21"}, "result 1 was sent with seed 20, the simulation runs seed 21 (give --seed 20)"},
		{"other scenario", []string{"heterogeneous", "--bench", benchRR}, `result 1 is a run of scenario "twenty-concurrent", the simulation is of "heterogeneous"`},
		{"other window", []string{"--bench", benchRR, "--duration", "20s"}, "result 1 sent arrivals for 10 s, the simulation runs 20 s"},
		{"one strategy twice", []string{"--bench", benchRR, "--bench", benchRR}, "two results of strategy round_robin"},
		{"not a strategy", []string{"--bench", other}, `labelled "rr"`},
		{"inconsistent file", []string{"--bench", broken}, broken + ": invalid bench result: completed and failed must sum to requests"},
		{"missing file", []string{"--bench", filepath.Join(dir, "absent.json")}, "no such file"},
		{"no scenario", []string{"--bench", noScenario}, "is a run of no scenario"},
		{"strategies too", []string{"--bench", benchRR, "--strategies", "round_robin,capacity"}, "--strategies and --bench are exclusive"},
		{"plots", []string{"--bench", benchRR, "--plots", dir}, "--plots and --decisions apply to simulated runs"},
		{"two scenarios", []string{"a", "b", "--bench", benchRR}, "accepts at most 1 arg"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"compare"}, c.args...)...)
			assert.Equal(t, exitUsage, code, out)
			assert.Contains(t, errOut, c.msg)
			assert.Empty(t, out, "nothing ran")
		})
	}
}

// TestConfigIsTheSimulatorsRouterConfig: anvil-sim config prints YAML the real loader reads, with the
// members on the given endpoints.
func TestConfigIsTheSimulatorsRouterConfig(t *testing.T) {
	code, out, errOut := runCLI(t, "config", "heterogeneous", "--strategy", "round_robin", "--listen", "127.0.0.1:0",
		"--endpoint", "http://127.0.0.1:41001", "--endpoint", "http://127.0.0.1:41002")
	require.Equal(t, 0, code, errOut)
	cfg, err := load.Parse([]byte(out), func(k string) (string, bool) { return "sim-vs-real-test-token", k == config.EnvAPIToken })
	require.NoError(t, err, out)
	tier, ok := cfg.Alias("chat")
	require.True(t, ok)
	assert.Equal(t, config.StrategyRoundRobin, tier.Strategy)
	require.Len(t, tier.Members, 2)
	assert.Equal(t, "http://127.0.0.1:41002", tier.Members[1].Endpoint)
	assert.Equal(t, "127.0.0.1:0", cfg.Listen())

	code, out, _ = runCLI(t, "config", "twenty-concurrent")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "replica_strategy: capacity", "the tier's own strategy by default")
	assert.Contains(t, out, "endpoint: http://127.0.0.1:20000", "the virtual members by default")
	assert.NotContains(t, out, "reloads")

	code, out, _ = runCLI(t, "config", "live-reload")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "# This is the configuration before the scenario's 3 reloads", "a reloading scenario says which generation it prints")
	assert.NotContains(t, out, "vllm-4", "the member its second reload adds")

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"config", "heterogeneous", "--endpoint", "http://127.0.0.1:1"}, "1 endpoints for 2 members"},
		{[]string{"config", "heterogeneous", "--strategy", "fastest"}, `"fastest" is not round_robin or capacity`},
		{[]string{"config", "heterogeneous", "--listen", "nowhere"}, "listen: must be host:port"},
		{[]string{"config"}, "accepts 1 arg"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, c.msg)
	}
}

func TestMembers(t *testing.T) {
	code, out, errOut := runCLI(t, "members", "heterogeneous")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "# id\tserved_model\tprofile\tstep_scale\n"+
		"vllm-fast\tsim/llama-3.1-8b\t8b-h100\t1\n"+
		"vllm-slow\tsim/llama-3.1-8b\t8b-h100\t2\n", out)
}

// TestRunDurationOverride: --duration runs the scenario as if its file said so.
func TestRunDurationOverride(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	code, _, errOut := runCLI(t, "run", "twenty-concurrent", "--duration", "5s", "--quiet", "--json", path)
	require.Contains(t, []int{0, exitFailure}, code, errOut) // gates written for a minute may fail in 5 s
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var r struct {
		DurationS float64 `json:"duration_s"`
	}
	require.NoError(t, json.Unmarshal(data, &r))
	assert.Equal(t, 5.0, r.DurationS)

	code, _, errOut = runCLI(t, "run", "member-drain", "--duration", "30s")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "events[2].at: must be within the run", "the readmit at 40 s falls past the new end")
}

// writeRaw writes a bench raw file of records against one target with urls base URLs.
func writeRaw(t *testing.T, dir string, urls int, recs []bench.Record) string {
	t.Helper()
	h := bench.RawHeader{Format: bench.RawFormat, Label: "alone", Scenario: "heterogeneous", Seed: 11, Endpoint: "chat",
		Mode: "open", Load: "open loop", Targets: []bench.TargetInfo{{Name: "target", Model: "m", URLs: urls}}}
	var buf bytes.Buffer
	require.NoError(t, bench.WriteRaw(&buf, h, recs))
	path := filepath.Join(dir, fmt.Sprintf("raw-%d.jsonl", urls))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

// TestReplay: a request the tiny engine answers in 1.201 ms (first token) and 3.24303 ms (end) on an
// idle engine, seen by the bench 2 and 3 ms later: the replay reports exactly what the real path
// added, and exits 1 since a millisecond engine cannot absorb that within 10%.
func TestReplay(t *testing.T) {
	dir := t.TempDir()
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	rec := bench.Record{Target: "target", Stream: true, Chunks: []time.Duration{ms(3.201), ms(6.24303)}, End: ms(6.24303),
		Status: 200, Outcome: bench.OK, PromptTokens: 100, OutputTokens: 3, Usage: true}
	raw := writeRaw(t, dir, 1, []bench.Record{rec})
	jsonPath := filepath.Join(dir, "replay.json")
	code, out, errOut := runCLI(t, "replay", raw, "--profile", "tiny", "--json", jsonPath)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "figures outside their bounds")
	assert.Contains(t, out, "anvil-sim replay: the alone run of heterogeneous against one member (profile tiny, step scale 1)")
	assert.Contains(t, out, "  ttft                         1  +2.0  +2.0  +2.0  +2.0  +2.0  +2.0\n")
	assert.Contains(t, out, "  e2e                          1  +3.0  +3.0  +3.0  +3.0  +3.0  +3.0\n")
	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var r fidelity.Replayed
	require.NoError(t, json.Unmarshal(data, &r))
	assert.Equal(t, fidelity.ReplayFormat, r.Format)
	assert.InDelta(t, 2.0, r.AddedTTFT.P50, 1e-9)

	two := writeRaw(t, dir, 2, []bench.Record{rec})
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{}\n"), 0o644))
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"replay", raw, "--profile", "70b-b200"}, `--profile: unknown profile "70b-b200"`},
		{[]string{"replay", raw, "--step-scale", "0"}, "--step-scale must be in (0, 1000]"},
		{[]string{"replay", two, "--profile", "tiny"}, "one member's URL"},
		{[]string{"replay", bad}, bad + ": invalid raw file: line 1: header"},
		{[]string{"replay"}, "accepts 1 arg"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		assert.Equal(t, exitUsage, code, c.args)
		assert.Contains(t, errOut, c.msg)
	}
}

// TestMembersOfAnEngineScenario: a tier that names its engine lists it in a fifth column, for
// anvil-fakevllm serve --engine.
func TestMembersOfAnEngineScenario(t *testing.T) {
	code, out, errOut := runCLI(t, "members", "engine-trtllm")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "# id\tserved_model\tprofile\tstep_scale\tengine\n"+
		"trt-0\tsim/llama-3.1-8b\t8b-h100\t1\ttrtllm\n"+
		"trt-1\tsim/llama-3.1-8b\t8b-h100\t2\ttrtllm\n"+
		"trt-2\tsim/llama-3.1-8b\t8b-h100\t1\ttrtllm\n", out)
}
