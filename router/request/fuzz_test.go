package request

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// isObject reports whether b is valid JSON whose value is an object.
func isObject(b []byte) bool {
	return json.Valid(b) && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
}

// checkAgainstOracle is the contract between the parser and its predecessor (oracle_test.go): the new
// parser refuses broken JSON exactly when encoding/json does, never accepts what the old strict rules
// refused, reads the same model, stream and tools, and measures at least as much; a rewritten body
// differs only in the model literal and parses again to the same measurements.
func checkAgainstOracle(t *testing.T, e Endpoint, body []byte) {
	r, err := Parse(e, body)
	assert.Equal(t, !isObject(body), errors.Is(err, ErrBadJSON), "ErrBadJSON exactly when encoding/json refuses")
	if err != nil {
		assert.Zero(t, r)
		return
	}
	old, oldErr := oracleParse(e, body)
	require.NoError(t, oldErr, "accepted what the old parser refused")
	assert.Equal(t, old.Model, r.Model)
	assert.Equal(t, old.Stream, r.Stream)
	assert.Equal(t, old.Tools, r.Tools)
	assert.GreaterOrEqual(t, r.PromptTokens, old.PromptTokens, "measured less than the old parser")
	assert.GreaterOrEqual(t, r.MaxOutput, old.MaxOutput)
	assert.True(t, r.Media || !old.Media, "missed media the old parser saw")

	for _, served := range []string{"served", `q"<&>\` + "\u2028"} {
		out := r.Body(served)
		lit, _ := json.Marshal(served)
		s, end := r.model[0], r.model[1]
		require.Equal(t, string(body[:s]), string(out[:s]), "bytes before the model value")
		require.Equal(t, string(lit), string(out[s:s+len(lit)]))
		require.Equal(t, string(body[end:]), string(out[s+len(lit):]), "bytes after the model value")
		again, err := Parse(e, out)
		require.NoError(t, err, "a rewritten body must parse again")
		assert.Equal(t, served, again.Model)
		again.Model, again.body, again.model = r.Model, r.body, r.model
		assert.Equal(t, r, again, "a rewritten body measures the same")
		var upstream struct{ Model string }
		require.NoError(t, json.Unmarshal(out, &upstream))
		assert.Equal(t, served, upstream.Model, "an encoding/json upstream reads the served model")
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add(uint8(0), `{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
	f.Add(uint8(1), `{"model":"m","prompt":["a",[1,2]],"max_tokens":3}`)
	f.Add(uint8(2), `{"model":"m","input":[{"type":"input_image"}],"tools":[{}]}`)
	f.Add(uint8(3), `{"model":"m","input":"x"}`)
	f.Add(uint8(0), `{"model":"m","messages":[{"content":[{"type":"text","Type":"image_url","text":"a"}],"Content":"b"}]}`)
	f.Add(uint8(0), `{"model":"m","MAX_TOKENS":400,"messages":[{"content":"a"}]}`)
	f.Add(uint8(0), "{\"model\":\"m\",\"max_to\u212aens\":400,\"messages\":[{\"content\":\"a\"}]}")
	f.Add(uint8(0), "{\"model\":\"m\",\"me\u017f\u017fages\":[{\"content\":\"a\"}],\"messages\":[]}")
	f.Add(uint8(1), `{"model":"m","max_tokens":2.0,"prompt":"a"}`)
	f.Add(uint8(0), ` { "model" : "m\u0041" , "x":[1,{"y":null}], "x":2, "messages" : [ {"content":"\ud83d\ude00"} ] } `)
	f.Add(uint8(2), `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"function_call_output","output":"x"}],"instructions":"b"}`)
	f.Add(uint8(1), `{"model":"m","prompt":[[1,null],null,-1]}`)
	f.Add(uint8(0), `{"model":"m","messages":[{"content":"a"}]} ]`)
	f.Add(uint8(4), `{"model":"m","input":"say it","voice":"alloy","speed":1.5}`)
	// The endpoints with JSON bodies (the multipart audio routes take forms, never JSON).
	jsonBodies := []Endpoint{ChatCompletions, Completions, Responses, Embeddings, AudioSpeech}
	f.Fuzz(func(t *testing.T, ep uint8, body string) {
		checkAgainstOracle(t, jsonBodies[int(ep)%len(jsonBodies)], []byte(body))
	})
}

// TestOracleAgreesOnOrdinaryBodies: on generated bodies with no duplicate or case-folded keys and one
// output field, the parser measures exactly what its predecessor did.
func TestOracleAgreesOnOrdinaryBodies(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := Endpoint(rapid.IntRange(0, 3).Draw(t, "endpoint"))
		text := rapid.StringMatching(`[a-zé😀\\"\n<>]{0,12}`)
		str := func(label string) string {
			b, _ := json.Marshal(text.Draw(t, label))
			return string(b)
		}
		fields := []string{`"model":` + str("model"), `"temperature":0.5`}
		if rapid.Bool().Draw(t, "stream") {
			fields = append(fields, `"stream":true`)
		}
		if rapid.Bool().Draw(t, "max") {
			name := maxOutputFields[e]
			if len(name) > 0 {
				fields = append(fields, fmt.Sprintf(`%q:%d`, fieldNames[name[0]], rapid.IntRange(1, 1<<20).Draw(t, "n")))
			}
		}
		if rapid.Bool().Draw(t, "tools") {
			fields = append(fields, `"tools":[{"type":"function"}]`)
		}
		part := func(label string) string {
			switch rapid.IntRange(0, 3).Draw(t, label) {
			case 0:
				return `{"type":"text","text":` + str(label+".text") + `}`
			case 1:
				return `{"type":"image_url","image_url":{"url":"x"}}`
			case 2:
				return `{"type":"input_audio","input_audio":{"data":"x"}}`
			}
			return `{"text":` + str(label+".text") + `}`
		}
		content := func(label string) string {
			if rapid.Bool().Draw(t, label+".parts") {
				n := rapid.IntRange(0, 3).Draw(t, label+".n")
				parts := make([]string, n)
				for i := range parts {
					parts[i] = part(fmt.Sprintf("%s.%d", label, i))
				}
				return "[" + strings.Join(parts, ",") + "]"
			}
			return str(label)
		}
		n := rapid.IntRange(1, 4).Draw(t, "items")
		items := make([]string, n)
		for i := range items {
			label := fmt.Sprintf("item%d", i)
			switch e {
			case ChatCompletions, Responses:
				items[i] = `{"role":"user","content":` + content(label) + `}`
			default:
				if rapid.Bool().Draw(t, label+".ids") {
					items[i] = "[1,2,3]"
				} else {
					items[i] = str(label)
				}
			}
		}
		list := "[" + strings.Join(items, ",") + "]"
		switch e {
		case ChatCompletions:
			fields = append(fields, `"messages":`+list)
		case Completions:
			fields = append(fields, `"prompt":`+list)
		default:
			fields = append(fields, `"input":`+list)
		}
		body := []byte("{" + strings.Join(fields, ",") + "}")
		r, err := Parse(e, body)
		old, oldErr := oracleParse(e, body)
		require.Equal(t, oldErr == nil, err == nil, "%s: new %v, old %v", body, err, oldErr)
		if err != nil {
			return
		}
		assert.Equal(t, old.PromptTokens, r.PromptTokens, "%s", body)
		assert.Equal(t, old.MaxOutput, r.MaxOutput)
		assert.Equal(t, old.Media, r.Media)
		assert.Equal(t, old.Model, r.Model)
	})
}
