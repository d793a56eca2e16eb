package profile

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
)

func TestEmbeddedProfiles(t *testing.T) {
	assert.Equal(t, []string{"8b-h100", "tiny", "zero"}, Names())
	for _, name := range Names() {
		p, err := Lookup(name)
		require.NoError(t, err, name)
		assert.Equal(t, name, p.Name, "file name and profile name agree")
		require.NoError(t, p.Validate())
	}
	def, err := Lookup(Default)
	require.NoError(t, err)
	assert.Equal(t, engine.DefaultProfile(), def, "the YAML and the engine's default agree")
	tiny, err := Lookup("tiny")
	require.NoError(t, err)
	assert.Equal(t, engine.TinyProfile(), tiny)

	assert.Equal(t, 5750*time.Microsecond, def.StepBase)
	assert.Equal(t, 40*time.Nanosecond, def.ContextPerToken)
	assert.Equal(t, 29205, def.NumGPUBlocks)
}

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("70b")
	require.ErrorIs(t, err, ErrUnknown)
	assert.EqualError(t, err, `unknown profile "70b" (known: 8b-h100, tiny, zero)`)
	_, err = Lookup(strings.Repeat("x", 1000))
	require.ErrorIs(t, err, ErrUnknown)
	assert.Less(t, len(err.Error()), 150, "long names are truncated")
	_, err = Lookup("../profile")
	assert.ErrorIs(t, err, ErrUnknown)
}

const valid = `name: custom
step_base: 2ms
prefill_per_token: 10us
decode_per_seq: 5µs
context_per_token: 20ns
jitter: 0.1
max_num_seqs: 32
max_num_batched_tokens: 2048
max_model_len: 4096
num_gpu_blocks: 1001
block_size: 16
`

func TestParseValid(t *testing.T) {
	p, err := Parse([]byte(valid))
	require.NoError(t, err)
	assert.Equal(t, engine.Profile{
		Name: "custom", StepBase: 2 * time.Millisecond, PrefillPerToken: 10 * time.Microsecond,
		DecodePerSeq: 5 * time.Microsecond, ContextPerToken: 20 * time.Nanosecond, Jitter: 0.1,
		MaxNumSeqs: 32, MaxNumBatchedTokens: 2048, MaxModelLen: 4096, NumGPUBlocks: 1001, BlockSize: 16,
	}, p)

	// Optional fields default to 0: no jitter, max_model_len = KV capacity.
	minimal := strings.NewReplacer("jitter: 0.1\n", "", "max_model_len: 4096\n", "").Replace(valid)
	p, err = Parse([]byte(minimal))
	require.NoError(t, err)
	assert.Zero(t, p.Jitter)
	assert.Equal(t, 16000, p.ModelLen())

	// Round trip through Format.
	for _, name := range Names() {
		want, err := Lookup(name)
		require.NoError(t, err)
		got, err := Parse(Format(want))
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

func TestParseErrors(t *testing.T) {
	replace := func(old, repl string) string {
		require.Contains(t, valid, old)
		return strings.Replace(valid, old, repl, 1)
	}
	cases := []struct {
		name, doc, want string
	}{
		{"empty", "", "profile: empty document"},
		{"comment only", "# nothing\n", "profile: empty document"},
		{"not yaml", "name: [", "profile: not valid YAML"},
		{"list", "- 1\n- 2\n", "profile: document must be a mapping of profile fields"},
		{"scalar", "tiny", "profile: document must be a mapping of profile fields"},
		{"two documents", valid + "---\n" + valid, "profile: more than one YAML document"},
		{"unknown key", valid + "max_loras: 4\n", `profile: line 12: field "max_loras": unknown field (known: name, step_base, ` +
			`prefill_per_token, decode_per_seq, context_per_token, jitter, max_num_seqs, max_num_batched_tokens, ` +
			`max_model_len, num_gpu_blocks, block_size)`},
		{"non-string key", valid + "1: x\n", "profile: line 12: field names must be plain strings"},
		{"duplicate", valid + "block_size: 32\n", "profile: line 12: field block_size: given more than once"},
		{"nested", replace("jitter: 0.1", "jitter:\n  value: 0.1"), "profile: line 7: field jitter: must be a single value, not a list, mapping or alias"},
		{"alias", "base: &b 1\n", `profile: line 1: field "base": unknown field (known: name, step_base, prefill_per_token, ` +
			`decode_per_seq, context_per_token, jitter, max_num_seqs, max_num_batched_tokens, max_model_len, num_gpu_blocks, block_size)`},
		{"alias value", replace("block_size: 16", "block_size: *x"), "profile: not valid YAML"},
		{"missing required", replace("max_num_seqs: 32\n", ""), "profile: field max_num_seqs: is required"},
		{"missing name first", replace("name: custom\n", ""), "profile: field name: is required"},
		{"name not string", replace("name: custom", "name: 7"), "profile: line 1: field name: must be a string"},
		{"name invalid", replace("name: custom", "name: Custom Profile"), "profile: line 1: field name: must be 1-64 characters [a-z0-9._-] starting with a letter or digit"},
		{"duration number", replace("step_base: 2ms", "step_base: 2"), "profile: line 2: field step_base: must be a duration string such as 5.75ms, 17us or 40ns"},
		{"duration garbage", replace("decode_per_seq: 5µs", "decode_per_seq: fast"), "profile: line 4: field decode_per_seq: must be a duration string such as 5.75ms, 17us or 40ns"},
		{"duration range", replace("step_base: 2ms", "step_base: 0s"), "profile: line 2: field step_base: must be a duration from 1µs to 10s"},
		{"negative duration", replace("context_per_token: 20ns", "context_per_token: -20ns"), "profile: line 5: field context_per_token: must be a duration from 0 to 1ms"},
		{"int as string", replace("max_num_seqs: 32", `max_num_seqs: "32"`), "profile: line 7: field max_num_seqs: must be an integer"},
		{"int as float", replace("max_num_seqs: 32", "max_num_seqs: 32.5"), "profile: line 7: field max_num_seqs: must be an integer"},
		{"int null", replace("max_num_seqs: 32", "max_num_seqs:"), "profile: line 7: field max_num_seqs: must be an integer"},
		{"hex int", replace("max_num_seqs: 32", "max_num_seqs: 0x20"), "profile: line 7: field max_num_seqs: must be a decimal integer within ±2147483647"},
		{"huge int", replace("num_gpu_blocks: 1001", "num_gpu_blocks: 99999999999999999999"), "profile: line 10: field num_gpu_blocks: must be an integer"},
		{"large int", replace("num_gpu_blocks: 1001", "num_gpu_blocks: 9999999999"), "profile: line 10: field num_gpu_blocks: must be a decimal integer within ±2147483647"},
		{"int range", replace("max_num_seqs: 32", "max_num_seqs: 0"), "profile: line 7: field max_num_seqs: must be an integer from 1 to 65536"},
		{"jitter string", replace("jitter: 0.1", "jitter: low"), "profile: line 6: field jitter: must be a number"},
		{"jitter inf", replace("jitter: 0.1", "jitter: .inf"), "profile: line 6: field jitter: must be a finite decimal number"},
		{"jitter nan", replace("jitter: 0.1", "jitter: .nan"), "profile: line 6: field jitter: must be a finite decimal number"},
		{"jitter range", replace("jitter: 0.1", "jitter: 2"), "profile: line 6: field jitter: must be a number from 0 to 0.5"},
		{"model len beyond kv", replace("max_model_len: 4096", "max_model_len: 16001"), "profile: line 9: field max_model_len: must not exceed the KV capacity (num_gpu_blocks-1)*block_size = 16000"},
		{"oversized", valid + "#" + strings.Repeat("x", MaxFileBytes), "profile: file larger than 64 KiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			require.Error(t, err)
			assert.EqualError(t, err, c.want)
			assert.ErrorIs(t, err, ErrInvalid)
			var fe *FieldError
			assert.ErrorAs(t, err, &fe)
		})
	}
	_, err := Parse([]byte(replace("max_num_seqs: 32", "max_num_seqs: 0")))
	assert.ErrorIs(t, err, engine.ErrInvalidProfile, "range errors also carry the engine's sentinel")
	var pe *engine.ProfileError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "max_num_seqs", pe.Field)
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	for _, name := range Names() {
		p, _ := Lookup(name)
		f.Add(Format(p))
	}
	f.Add([]byte("name: a\nstep_base: 1ms\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte("{name: x, jitter: .5}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			var fe *FieldError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) {
				t.Fatalf("untyped error %v", err)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("error too long: %d bytes", len(err.Error()))
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted an invalid profile: %v", err)
		}
		again, err := Parse(Format(p))
		if err != nil || again != p {
			t.Fatalf("round trip: %+v -> %+v, %v", p, again, err)
		}
		if _, err := engine.New(p, time.Time{}, 0); err != nil {
			t.Fatalf("engine refused a parsed profile: %v", err)
		}
	})
}
