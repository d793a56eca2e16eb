package fakevllm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFaultsYAMLAndJSONAgree(t *testing.T) {
	yamlDoc := `
http_errors:
  - {status: 503, rate: 0.25}
  - {status: 429, rate: 0.5}
engine_dead: true
slow_start: 1.5s
step_time_multiplier: 2
truncate: {chunk: 3}
malformed: {chunk: 2, rate: 0.5}
error_event: {chunk: 4}
metrics: {mode: slow}
kv_blocks: 10
`
	jsonDoc := `{"http_errors":[{"status":503,"rate":0.25},{"status":429,"rate":0.5}],"engine_dead":true,
"slow_start":"1.5s","step_time_multiplier":2,"truncate":{"chunk":3},"malformed":{"chunk":2,"rate":0.5},
"error_event":{"chunk":4},"metrics":{"mode":"slow"},"kv_blocks":10}`
	fy, err := ParseFaults([]byte(yamlDoc))
	require.NoError(t, err)
	fj, err := ParseFaults([]byte(jsonDoc))
	require.NoError(t, err)
	assert.Equal(t, fy, fj)
	assert.Equal(t, Duration(1500*time.Millisecond), fy.SlowStart)
	assert.Equal(t, 1.0, fy.Truncate.Rate, "rate defaults to 1 when a chunk is set")
	assert.Equal(t, StreamFault{Chunk: 4, Rate: 1}, fy.ErrorEvent)
	assert.Equal(t, Duration(DefaultMetricsDelay), fy.Metrics.Delay, "slow metrics default delay")

	// GET /admin/faults output round-trips through ParseFaults.
	out, err := json.Marshal(fy)
	require.NoError(t, err)
	back, err := ParseFaults(out)
	require.NoError(t, err)
	assert.Equal(t, fy, back)
}

func TestParseFaultsEmptyAndZero(t *testing.T) {
	for _, doc := range []string{"", "  \n", "{}", "---\n"} {
		f, err := ParseFaults([]byte(doc))
		require.NoError(t, err, "%q", doc)
		assert.Equal(t, Faults{}, f)
	}
	out, err := json.Marshal(Faults{})
	require.NoError(t, err)
	assert.Equal(t, "{}", string(out), "the zero faults serialize empty")
}

func TestParseFaultsInvalid(t *testing.T) {
	tests := map[string]string{
		"unknown field":          `{"engine_deadd": true}`,
		"wrong type":             `{"engine_dead": "yes please"}`,
		"status too low":         `{"http_errors":[{"status":200,"rate":0.1}]}`,
		"duplicate status":       `{"http_errors":[{"status":503,"rate":0.1},{"status":503,"rate":0.1}]}`,
		"rates above one":        `{"http_errors":[{"status":503,"rate":0.6},{"status":500,"rate":0.6}]}`,
		"negative rate":          `{"http_errors":[{"status":503,"rate":-0.1}]}`,
		"bad duration":           `{"slow_start":"soon"}`,
		"numeric duration":       `{"slow_start": 5}`,
		"negative slow start":    `{"slow_start":"-1s"}`,
		"multiplier too big":     `{"step_time_multiplier": 5000}`,
		"multiplier negative":    `{"step_time_multiplier": -1}`,
		"negative chunk":         `{"truncate":{"chunk":-1}}`,
		"rate above one":         `{"malformed":{"chunk":1,"rate":2}}`,
		"unknown metrics mode":   `{"metrics":{"mode":"sleepy"}}`,
		"bad missing name":       `{"metrics":{"mode":"missing","missing":["has space"]}}`,
		"negative kv blocks":     `{"kv_blocks": -3}`,
		"two documents":          "engine_dead: true\n---\nengine_dead: false\n",
		"not a mapping":          `[1, 2]`,
		"malformed yaml":         "engine_dead: [",
		"metrics delay too long": `{"metrics":{"mode":"slow","delay":"2h"}}`,
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseFaults([]byte(doc))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalidFaults), "%v wraps ErrInvalidFaults", err)
		})
	}
	_, err := ParseFaults([]byte(strings.Repeat(" ", MaxFaultsBytes+1)))
	assert.ErrorIs(t, err, ErrInvalidFaults, "oversized document")
}

// TestParseFaultsJSONIsStrictJSON: a document opening with '{' is JSON and
// gets JSON's types; YAML keeps YAML's.
func TestParseFaultsJSONIsStrictJSON(t *testing.T) {
	bad := map[string]string{
		"YAML 1.1 boolean string": `{"engine_dead":"yes"}`,
		"on as a boolean":         ` {"engine_dead":"on"}`,
		"quoted number":           `{"kv_blocks":"4"}`,
		"fractional int":          `{"kv_blocks":4.5}`,
		"unknown field":           `{"engine_dead":true,"extra":1}`,
		"unknown nested field":    `{"truncate":{"chunk":1,"every":2}}`,
		"trailing data":           `{"engine_dead":true} {"kv_blocks":1}`,
		"trailing garbage":        `{"engine_dead":true} x`,
		"truncated":               `{"engine_dead":tr`,
		"unquoted keys":           `{engine_dead: true}`,
	}
	for name, doc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := ParseFaults([]byte(doc))
			assert.ErrorIs(t, err, ErrInvalidFaults)
		})
	}
	good := map[string]Faults{
		"\n\t{\"engine_dead\":true}\n":      {EngineDead: true},
		`{"kv_blocks":4,"slow_start":"1s"}`: {KVBlocks: 4, SlowStart: Duration(time.Second)},
		"engine_dead: yes\n":                {EngineDead: true}, // YAML 1.1, as yaml.v3 reads it
		"engine_dead: true\nkv_blocks: 4":   {EngineDead: true, KVBlocks: 4},
	}
	for doc, want := range good {
		f, err := ParseFaults([]byte(doc))
		require.NoError(t, err, "%q", doc)
		assert.Equal(t, want, f, "%q", doc)
	}
	_, err := ParseFaults([]byte(`{"engine_dead":"` + strings.Repeat("y", 1000) + `"}`))
	require.ErrorIs(t, err, ErrInvalidFaults)
	assert.Less(t, len(err.Error()), 400, "the error quotes the input boundedly")
}

func TestNormalizeDisablesZeroChunk(t *testing.T) {
	f, err := Faults{Truncate: StreamFault{Rate: 0.5}}.Normalize()
	require.NoError(t, err)
	assert.Equal(t, StreamFault{}, f.Truncate)
}

func TestFaultDrawsAreSeededAndIndependent(t *testing.T) {
	draws := func(seed uint64, f Faults) (codes []int, plans []streamPlan) {
		s := newFaultState(seed)
		s.set(f, time.Unix(0, 0))
		for range 200 {
			codes = append(codes, s.drawHTTPError())
			plans = append(plans, s.drawStreamPlan())
		}
		return codes, plans
	}
	f := Faults{HTTPErrors: []HTTPErrorFault{{Status: 503, Rate: 0.3}, {Status: 500, Rate: 0.2}},
		Truncate: StreamFault{Chunk: 2, Rate: 0.5}, Malformed: StreamFault{Chunk: 1, Rate: 0.5}}
	c1, p1 := draws(1, f)
	c2, p2 := draws(1, f)
	assert.Equal(t, c1, c2, "same seed, same error sequence")
	assert.Equal(t, p1, p2, "same seed, same stream plans")
	counts := map[int]int{}
	for _, c := range c1 {
		counts[c]++
	}
	assert.Len(t, counts, 3, "both statuses and successes occur: %v", counts)
	assert.InDelta(t, 60, counts[503], 25)
	assert.InDelta(t, 40, counts[500], 25)

	// Turning the HTTP error fault off leaves the stream draws unchanged.
	g := f
	g.HTTPErrors = nil
	c3, p3 := draws(1, g)
	assert.Equal(t, p1, p3)
	for _, c := range c3 {
		assert.Zero(t, c)
	}
	_, p4 := draws(2, f)
	assert.NotEqual(t, p1, p4, "another seed, another sequence")
}

func FuzzParseFaults(f *testing.F) {
	f.Add([]byte(`{"http_errors":[{"status":503,"rate":0.5}],"truncate":{"chunk":3}}`))
	f.Add([]byte("metrics:\n  mode: missing\n  missing: [vllm:num_requests_running]\n"))
	f.Add([]byte("slow_start: 2s\nkv_blocks: 4\n"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte(`{"engine_dead":"yes"}`))
	f.Add([]byte(`{"engine_dead":true} x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		faults, err := ParseFaults(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidFaults) {
				t.Fatalf("error %v does not wrap ErrInvalidFaults", err)
			}
			return
		}
		again, err := faults.Normalize()
		if err != nil {
			t.Fatalf("parsed faults do not validate: %v", err)
		}
		if again.Truncate != faults.Truncate || again.Metrics.Delay != faults.Metrics.Delay {
			t.Fatalf("normalize is not idempotent")
		}
		out, err := json.Marshal(faults)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := ParseFaults(out); err != nil {
			t.Fatalf("round trip of %s: %v", out, err)
		}
	})
}
