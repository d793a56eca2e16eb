package ceiling

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSLO(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SLO
		err  string
	}{
		{"", SLO{}, ""},
		{"ttft=500ms", SLO{TTFT: 500 * time.Millisecond}, ""},
		{"ttft=500ms,tpot=50ms", SLO{TTFT: 500 * time.Millisecond, TPOT: 50 * time.Millisecond}, ""},
		{" tpot = 40ms , ttft=2s ", SLO{TTFT: 2 * time.Second, TPOT: 40 * time.Millisecond}, ""},
		{"ttft=1us", SLO{TTFT: time.Microsecond}, ""},
		{"ttft=1h", SLO{TTFT: time.Hour}, ""},
		{"ttft", SLO{}, "key=duration"},
		{"ttft=500ms,", SLO{}, "key=duration"},
		{"e2e=1s", SLO{}, "ttft or tpot"},
		{"itl=50ms", SLO{}, "ttft or tpot"}, // the per-gap key of old: TPOT is what the gate judges
		{"TTFT=1s", SLO{}, "ttft or tpot"},
		{"ttft=1s,ttft=2s", SLO{}, "twice"},
		{"ttft=fast", SLO{}, "a duration"},
		{"ttft=500", SLO{}, "a duration"},
		{"ttft=0s", SLO{}, "from 1µs to 1h"},
		{"ttft=-1s", SLO{}, "from 1µs to 1h"},
		{"ttft=2h", SLO{}, "from 1µs to 1h"},
		{strings.Repeat("x", 257), SLO{}, "256 bytes"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSLO(tc.in)
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				again, err := ParseSLO(got.String())
				require.NoError(t, err)
				assert.Equal(t, got, again, "String reads back")
				return
			}
			require.ErrorIs(t, err, ErrSLO)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// A refusal never echoes the input: the flag's value could be anything an operator pasted.
func TestParseSLOEchoesNothing(t *testing.T) {
	_, err := ParseSLO("ttft=secret-token-123")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret-token-123")
}

func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"", "ttft=500ms", "ttft=500ms,tpot=50ms", "tpot=1h", "itl=50ms", "ttft=1s,ttft=2s", "x=1", "ttft=", "=,=", "ttft=1e9h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slo, err := ParseSLO(s)
		if err != nil {
			if !errors.Is(err, ErrSLO) {
				t.Fatalf("error %v does not wrap ErrSLO", err)
			}
			if len(s) > 8 && strings.Contains(err.Error(), s) {
				t.Fatalf("error echoes the input: %v", err)
			}
			return
		}
		for _, d := range []time.Duration{slo.TTFT, slo.TPOT} {
			if d != 0 && (d < time.Microsecond || d > MaxTarget) {
				t.Fatalf("accepted an out-of-range target %v from %q", d, s)
			}
		}
		again, err := ParseSLO(slo.String())
		if err != nil || again != slo {
			t.Fatalf("String %q does not read back: %v %v", slo.String(), again, err)
		}
	})
}
