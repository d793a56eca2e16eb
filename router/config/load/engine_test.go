package load

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
)

// TestEngineKey: a replica tier takes every adapter's engine name, shows it in the normalized
// document and reports a change of it in the diff; absent is vllm.
func TestEngineKey(t *testing.T) {
	base, err := Parse(loadDoc(t, baseDoc).bytes(t), envMap(baseEnv()))
	require.NoError(t, err)
	assert.Equal(t, adapter.VLLM, base.Tiers()[0].Engine, "absent is vllm")
	for _, e := range adapter.Engines() {
		t.Run(e, func(t *testing.T) {
			d := loadDoc(t, baseDoc)
			d.set(t, "tiers[0].engine", e)
			c, err := Parse(d.bytes(t), envMap(baseEnv()))
			require.NoError(t, err)
			tier := c.Tiers()[0]
			assert.Equal(t, e, tier.Engine)
			norm, err := c.Normalized()
			require.NoError(t, err)
			assert.Contains(t, string(norm), "    engine: "+e+"\n")
			var lines []string
			for _, ch := range config.Diff(base, c) {
				lines = append(lines, ch.String())
			}
			if e == adapter.VLLM {
				assert.Empty(t, lines, "explicit vllm is the default")
			} else {
				assert.Equal(t, []string{"tiers." + tier.ID + ".engine: vllm -> " + e}, lines)
			}
		})
	}
}
