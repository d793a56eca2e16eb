package enginepage_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/internal/enginepage"
)

var update = flag.Bool("update", false, "rewrite the golden pages under testdata/")

const llama = "meta-llama/Llama-3.1-8B-Instruct"

// busy is an engine state with every figure distinct: 3 running, 2 waiting, 1200 of 4000 blocks.
var busy = engine.Metrics{Running: 3, Waiting: 2, KVUsage: 0.3, UsedBlocks: 1200, TotalBlocks: 4000,
	PromptTokens: 5000, GenerationTokens: 7000, Submitted: 9, LastStep: engine.StepStats{Seqs: 3, DecodeSeqs: 2}}

func text(t *testing.T, p *enginepage.Page) string {
	t.Helper()
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range p.Gather() {
		require.NoError(t, enc.Encode(mf))
	}
	return buf.String()
}

// TestGoldenPages: each engine's page, current and legacy, as text (testdata/ENGINE[-legacy].txt).
func TestGoldenPages(t *testing.T) {
	for _, e := range enginepage.Engines() {
		for _, legacy := range []bool{false, true} {
			name := e
			if legacy {
				name += "-legacy"
			}
			t.Run(name, func(t *testing.T) {
				p, err := enginepage.New(enginepage.Options{Engine: e, Model: llama, BlockSize: 16, MaxNumSeqs: 64, Legacy: legacy})
				require.NoError(t, err)
				p.Set(busy)
				got := text(t, p)
				path := filepath.Join("testdata", name+".txt")
				if *update {
					require.NoError(t, os.MkdirAll("testdata", 0o755))
					require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
				}
				want, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, string(want), got)
				for _, f := range enginepage.PressureFamilies(e) {
					if mf, ok := p.Families()[f]; ok {
						assert.Equal(t, f, mf.GetName())
					}
				}
			})
		}
	}
}

func TestUnknownEngine(t *testing.T) {
	_, err := enginepage.New(enginepage.Options{Engine: "ollama"})
	require.ErrorIs(t, err, enginepage.ErrUnknownEngine)
	p, err := enginepage.New(enginepage.Options{Model: "m"})
	require.NoError(t, err, "the default engine is vllm")
	assert.Contains(t, p.Families(), "vllm:num_requests_running")
}

// TestSetAllocatesNothing: the simulator refreshes a page per scrape.
func TestSetAllocatesNothing(t *testing.T) {
	for _, e := range enginepage.Engines() {
		p, err := enginepage.New(enginepage.Options{Engine: e, Model: llama, BlockSize: 16, MaxNumSeqs: 64})
		require.NoError(t, err)
		assert.Zero(t, testing.AllocsPerRun(100, func() { p.Set(busy); _ = p.Families() }), e)
	}
}
