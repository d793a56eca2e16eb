package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleResults are the two results of sampleRun as anvil-bench writes them (indented JSON), with
// an arrival window.
func sampleResults(t testing.TB) ([]Result, [][]byte) {
	h, recs := sampleRun()
	h.ArrivalWindowS = 60
	results := Build(h, recs)
	var files [][]byte
	for _, r := range results {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		require.NoError(t, enc.Encode(r))
		files = append(files, buf.Bytes())
		r.samples = samples{}
	}
	return results, files
}

func TestReadResultRoundTrips(t *testing.T) {
	results, files := sampleResults(t)
	for i, data := range files {
		got, err := ReadResult(bytes.NewReader(data))
		require.NoError(t, err, "%s", data)
		want := results[i]
		want.samples = samples{}
		assert.Equal(t, want, got)
		assert.Equal(t, 60.0, got.ArrivalWindowS)
	}
}

// mutate decodes a result file into a generic map, applies change and encodes it again.
func mutate(t *testing.T, data []byte, change func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	change(m)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

func TestReadResultRefuses(t *testing.T) {
	_, files := sampleResults(t)
	valid := files[0] // direct: 4 requests, 3 completed, 2 URLs, SLOs set
	sub := func(key string) func(m map[string]any) map[string]any {
		return func(m map[string]any) map[string]any { return m[key].(map[string]any) }
	}
	cases := []struct {
		name string
		in   string
		msg  string
	}{
		{"empty", "", "not one JSON object"},
		{"array", "[]", "not one JSON object"},
		{"trailing data", string(valid) + "{}", "not one JSON object"},
		{"duplicate key", strings.Replace(string(valid), `"seed": 20,`, `"seed": 20, "seed": 21,`, 1), "duplicate key"},
		{"unknown key", strings.Replace(string(valid), `"seed": 20,`, `"seed": 20, "colour": 1,`, 1), "unknown key or wrong value type"},
		{"wrong type", strings.Replace(string(valid), `"seed": 20,`, `"seed": "20",`, 1), "unknown key or wrong value type"},
		{"comparison", mutate(t, valid, func(m map[string]any) { m["format"] = ComparisonFormat }), "a comparison's result, not a run's"},
		{"other format", mutate(t, valid, func(m map[string]any) { m["format"] = "anvil-bench-result/9" }), "format must be anvil-bench-result/1"},
		{"bad label", mutate(t, valid, func(m map[string]any) { m["label"] = "no spaces" }), "label must be"},
		{"bad scenario", mutate(t, valid, func(m map[string]any) { m["scenario"] = "Upper" }), "scenario must be a scenario name"},
		{"bad window", mutate(t, valid, func(m map[string]any) { m["arrival_window_s"] = 0.5 }), "arrival_window_s must be"},
		{"long window", mutate(t, valid, func(m map[string]any) { m["arrival_window_s"] = 86401 }), "arrival_window_s must be"},
		{"counts disagree", mutate(t, valid, func(m map[string]any) { m["failed"] = 2 }), "completed and failed must sum to requests"},
		{"no rounds", mutate(t, valid, func(m map[string]any) { m["rounds"] = 0 }), "rounds must be"},
		{"outcomes short", mutate(t, valid, func(m map[string]any) { m["outcomes"] = m["outcomes"].([]any)[1:] }), "outcomes must list every outcome class"},
		{"outcomes reordered", mutate(t, valid, func(m map[string]any) {
			o := m["outcomes"].([]any)
			o[0], o[1] = o[1], o[0]
		}), "in order"},
		{"outcomes sum", mutate(t, valid, func(m map[string]any) { m["outcomes"].([]any)[7].(map[string]any)["n"] = 1 }), "outcomes must sum to requests"},
		{"unknown detail", mutate(t, valid, func(m map[string]any) { m["details"] = []any{map[string]any{"key": "gremlins", "n": 1}} }), "details must be known"},
		{"too many details", mutate(t, valid, func(m map[string]any) { m["details"] = []any{map[string]any{"key": "io", "n": 2}} }), "details must not count more"},
		{"urls missing", mutate(t, valid, func(m map[string]any) { m["urls"] = m["urls"].([]any)[:1] }), "urls must list every base URL"},
		{"urls miscounted", mutate(t, valid, func(m map[string]any) { m["urls"].([]any)[0].(map[string]any)["sent"] = 3 }), "urls must account"},
		{"goodput without slo", mutate(t, valid, func(m map[string]any) { m["slo"] = map[string]any{"ttft_ms": 0, "tpot_ms": 0, "e2el_ms": 0} }), "request_goodput is given exactly when"},
		{"goodput above throughput", mutate(t, valid, func(m map[string]any) { m["request_goodput"] = 100 }), "at most request_throughput"},
		{"negative throughput", mutate(t, valid, func(m map[string]any) { m["output_throughput"] = -1 }), "throughputs must be"},
		{"tokens too many", mutate(t, valid, func(m map[string]any) { m["total_input_tokens"] = float64(1 << 53) }), "token totals must be"},
		{"percentiles unordered", mutate(t, valid, func(m map[string]any) { sub("ttft_ms")(m)["p99"] = 1 }), "ttft_ms: statistics must be"},
		{"negative latency", mutate(t, valid, func(m map[string]any) { sub("e2el_ms")(m)["min"] = -1 }), "e2el_ms: statistics must be"},
		{"mean outside", mutate(t, valid, func(m map[string]any) { sub("e2el_ms")(m)["mean"] = 1e6 }), "e2el_ms: mean must lie"},
		{"ttft sample too large", mutate(t, valid, func(m map[string]any) { sub("ttft_ms")(m)["n"] = 4 }), "ttft_ms: n out of range"},
		{"empty sample with values", mutate(t, valid, func(m map[string]any) { sub("tpot_ms")(m)["n"] = 0 }), "tpot_ms: an empty sample has all statistics 0"},
		{"e2el misses successes", mutate(t, valid, func(m map[string]any) { sub("e2el_ms")(m)["n"] = 2 }), "e2el_ms counts every success"},
		{"too large", `{"format":"` + strings.Repeat("x", MaxResultBytes) + `"}`, "larger than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadResult(strings.NewReader(c.in))
			require.ErrorIs(t, err, ErrResult)
			assert.Contains(t, err.Error(), c.msg)
			assert.NotContains(t, err.Error(), "gremlins", "the file's content is never echoed")
		})
	}
}

// Result files are outside input: any bytes either read into a result that writes back to the
// same result, or fail with ErrResult; nothing panics.
func FuzzReadResult(f *testing.F) {
	_, files := sampleResults(f)
	for _, data := range files {
		f.Add(string(data))
		f.Add(strings.Replace(string(data), `"p50"`, `"p50": 1, "p50"`, 1))
		f.Add(strings.Replace(string(data), `"completed": 3`, `"completed": 2`, 1))
	}
	f.Add(`{"format":"anvil-bench-compare/1"}`)
	f.Add("{}")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		res, err := ReadResult(strings.NewReader(in))
		if err != nil {
			require.ErrorIs(t, err, ErrResult)
			return
		}
		out, err := json.Marshal(res)
		require.NoError(t, err)
		again, err := ReadResult(bytes.NewReader(out))
		require.NoError(t, err, "a result that reads writes back to one that reads")
		require.Equal(t, res, again)
	})
}
