package relay

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inspectJSON is inspect as it was with encoding/json (before the probe): the oracle the probe is held
// to. It is kept verbatim in the tests only.
func inspectJSON(ev event) (eventInfo, error) {
	var info eventInfo
	if ev.dataLines == 0 {
		return info, nil
	}
	if ev.dataLines == 1 && string(ev.data) == "[DONE]" {
		info.done = true
		return info, nil
	}
	info.failed = string(ev.name) == "error"
	if !strings.Contains(string(ev.data), `"error"`) && !strings.Contains(string(ev.data), `"type"`) {
		if !json.Valid(ev.data) {
			return info, ErrMalformedEvent
		}
		return info, nil
	}
	var probe struct {
		Error json.RawMessage `json:"error"`
		Type  string          `json:"type"`
	}
	var syntax *json.SyntaxError
	if err := json.Unmarshal(ev.data, &probe); errors.As(err, &syntax) {
		return info, ErrMalformedEvent
	}
	if len(probe.Error) > 0 && string(probe.Error) != "null" {
		info.failed = true
	}
	switch probe.Type {
	case "error":
		info.failed = true
	case "response.failed":
		info.failed, info.terminal = true, true
	case "response.completed", "response.incomplete", "transcript.text.done", "speech.audio.done":
		info.terminal = true
	}
	return info, nil
}

// probeCases are the corners of encoding/json's decoding the probe must keep: folded and escaped
// keys, duplicates, values of the wrong kind, and what only looks like a member.
var probeCases = []struct {
	name, data string
	want       eventInfo
}{
	{"key in upper case", `{"TYPE":"response.completed","x":"type"}`, eventInfo{terminal: true}},
	{"key in mixed case", `{"tYpE":"error","note":"the type"}`, eventInfo{failed: true}},
	{"folded error key", `{"ERROR":{},"x":"error"}`, eventInfo{failed: true}},
	{"folded key without the filter's needle", `{"Type":"response.completed"}`, eventInfo{}},
	{"escaped key", `{"t\u0079pe":"response.completed","error":null}`, eventInfo{terminal: true}},
	{"escaped value", `{"type":"response.\u0063ompleted"}`, eventInfo{terminal: true}},
	{"escaped error key", `{"\u0065rror":1,"type":"x"}`, eventInfo{failed: true}},
	{"last type wins", `{"type":"response.completed","type":"response.output_text.delta"}`, eventInfo{}},
	{"last type wins, other order", `{"type":"x","type":"response.completed"}`, eventInfo{terminal: true}},
	{"null type keeps the earlier one", `{"type":"response.completed","type":null}`, eventInfo{terminal: true}},
	{"number type keeps the earlier one", `{"type":"response.failed","type":7}`, eventInfo{failed: true, terminal: true}},
	{"object type keeps the earlier one", `{"type":"response.completed","type":{"type":"error"}}`, eventInfo{terminal: true}},
	{"long type replaces the earlier one", `{"type":"response.completed","type":"` + strings.Repeat("z", 64) + `"}`, eventInfo{}},
	{"type with a prefix of a known one", `{"type":"response.completed.x"}`, eventInfo{}},
	{"type case matters in the value", `{"type":"Response.Completed"}`, eventInfo{}},
	{"last error wins: null", `{"error":{"message":"x"},"error":null}`, eventInfo{}},
	{"last error wins: set", `{"error":null,"error":false}`, eventInfo{failed: true}},
	{"empty string error", `{"error":""}`, eventInfo{failed: true}},
	{"spaced null error", `{"error" :  null , "type":"a"}`, eventInfo{}},
	{"error in an array", `[{"error":1}]`, eventInfo{}},
	{"top-level string", `"type"`, eventInfo{}},
	{"top-level null", `null`, eventInfo{}},
	{"long key", `{"typetypetype":"response.completed","type":"x"}`, eventInfo{}},
	{"long escaped key", `{"\u0065rror` + strings.Repeat("x", 20) + `":1,"t\u0079pe` + strings.Repeat("\u0065", 8) + `":"error"}`, eventInfo{}},
	{"escaped key of 8 bytes", `{"\u0065rror\u0020\u0020\u0020":1}`, eventInfo{}},
	{"invalid utf-8 in type", "{\"type\":\"response.complete\xff\"}", eventInfo{}},
	{"lone surrogate in key", `{"type\ud800":"response.completed","type":"q"}`, eventInfo{}},
	{"space around the object", " \t{\"type\":\"error\"}\r\n", eventInfo{failed: true}},
}

func TestInspectProbeCorners(t *testing.T) {
	for _, tc := range probeCases {
		t.Run(tc.name, func(t *testing.T) {
			ev := event{data: []byte(tc.data), dataLines: 1}
			got, err := inspect(ev)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			want, werr := inspectJSON(ev)
			require.NoError(t, werr)
			assert.Equal(t, want, got, "encoding/json decides otherwise")
		})
	}
}

// TestInspectMalformed: what json.Valid refuses stays a malformed event, the nesting limit included.
func TestInspectMalformed(t *testing.T) {
	for _, data := range []string{
		`{"type":"response.completed"`, `{"type":"response.completed",}`, `{"type" "x"}`,
		`{"type":"a"} {}`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		`{"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `,"type":"error"}`,
		"{\"type\":\"a\x01\"}", `{"type":"\x"}`,
	} {
		_, err := inspect(event{data: []byte(data), dataLines: 1})
		assert.ErrorIs(t, err, ErrMalformedEvent, "%.40q", data)
	}
	got, err := inspect(event{data: []byte(strings.Repeat("[", 10000) + strings.Repeat("]", 10000)), dataLines: 1})
	require.NoError(t, err, "the limit itself is valid")
	assert.Equal(t, eventInfo{}, got)
}

// TestInspectDoesNotAllocate: the classification of a Responses event costs no allocation (this one
// cost ten with encoding/json).
func TestInspectDoesNotAllocate(t *testing.T) {
	ev := event{data: []byte(respCompleted), name: []byte("response.completed"), dataLines: 1}
	allocs := testing.AllocsPerRun(100, func() { _, _ = inspect(ev) })
	assert.Zero(t, allocs)
}

// FuzzInspect holds inspect to the encoding/json implementation it replaced, on arbitrary data and
// event names.
func FuzzInspect(f *testing.F) {
	for _, tc := range probeCases {
		f.Add(tc.data, "", 1)
	}
	for _, s := range []string{respCompleted, respFailed, errorEventVLLM, chunk(3), "[DONE]", `{"error":null}`, ""} {
		f.Add(s, "", 1)
		f.Add(s, "error", 2)
	}
	f.Fuzz(func(t *testing.T, data, name string, lines int) {
		ev := event{data: []byte(data), name: []byte(name), dataLines: lines & 3}
		got, err := inspect(ev)
		want, werr := inspectJSON(ev)
		if !errors.Is(err, werr) || got != want {
			t.Fatalf("inspect(%q, name %q) = %+v, %v; encoding/json: %+v, %v", data, name, got, err, want, werr)
		}
	})
}
