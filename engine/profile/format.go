package profile

import (
	"strconv"
	"strings"

	"github.com/anvil-llm/anvil/engine"
)

// Format renders p as a profile document that Parse reads back to p. It
// does not validate p.
func Format(p engine.Profile) []byte {
	var b strings.Builder
	line := func(k, v string) { b.WriteString(k + ": " + v + "\n") }
	line("name", strconv.Quote(p.Name))
	line("step_base", p.StepBase.String())
	line("prefill_per_token", p.PrefillPerToken.String())
	line("decode_per_seq", p.DecodePerSeq.String())
	line("context_per_token", p.ContextPerToken.String())
	line("jitter", strconv.FormatFloat(p.Jitter, 'g', -1, 64))
	line("max_num_seqs", strconv.Itoa(p.MaxNumSeqs))
	line("max_num_batched_tokens", strconv.Itoa(p.MaxNumBatchedTokens))
	line("max_model_len", strconv.Itoa(p.MaxModelLen))
	line("num_gpu_blocks", strconv.Itoa(p.NumGPUBlocks))
	line("block_size", strconv.Itoa(p.BlockSize))
	return []byte(b.String())
}
