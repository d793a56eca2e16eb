package fakevllm

import (
	"hash"
	"hash/fnv"
)

// Prompt token estimate. The fake has no tokenizer, so prompt tokens are
// estimated deterministically from the text's UTF-8 bytes, roughly as a BPE
// tokenizer averages on English text:
//
//	text:        ceil(bytes / 4)
//	chat:        chatPrimerTokens + sum over messages of (chatMessageTokens + text(content))
//	completions: text(prompt), or the number of token IDs when the prompt is IDs
//	responses:   like chat, with the instructions (if any) as one more message
//
// The per-message overhead stands for the chat template's role markers.
const (
	bytesPerToken     = 4
	chatMessageTokens = 4
	chatPrimerTokens  = 3
)

// EstimateTextTokens is the fake tokenizer: ceil(len(s)/4) tokens for s.
func EstimateTextTokens(s string) int {
	return (len(s) + bytesPerToken - 1) / bytesPerToken
}

// promptHasher accumulates a stable hash of the prompt text, from which the
// natural stop length is derived; stream or not, the same prompt stops at the
// same length.
type promptHasher struct {
	h hash.Hash64
}

func newPromptHasher() promptHasher { return promptHasher{h: fnv.New64a()} }

func (p promptHasher) add(parts ...string) {
	for _, s := range parts {
		_, _ = p.h.Write([]byte(s))
		_, _ = p.h.Write([]byte{0})
	}
}

func (p promptHasher) sum() uint64 { return p.h.Sum64() }

// naturalStop is the generated length at which the model "emits EOS" when
// ignore_eos is false: derived from the prompt hash, in the upper half of
// [1, min(max-1, cap)] so replies look like replies, and always shorter than
// max. It returns 0 (no natural stop: finish by length) when max is 1.
func naturalStop(hash uint64, maxTokens, capTokens int) int {
	limit := min(maxTokens-1, capTokens)
	if limit < 1 {
		return 0
	}
	low := (limit + 1) / 2
	return low + int(hash%uint64(limit-low+1))
}

// fillerWords is the generated text's vocabulary: one word per token.
var fillerWords = [...]string{
	"the", "engine", "schedules", "running", "requests", "first", "then", "admits",
	"waiting", "ones", "while", "slots", "and", "blocks", "allow", "each",
	"step", "emits", "one", "token", "per", "sequence", "under", "a",
	"budget", "of", "batched", "tokens", "so", "latency", "grows", "with",
	"load", "router", "picks", "least", "loaded", "member", "by", "fresh",
	"pressure", "lease", "count", "capacity", "ratio", "queue", "prefill", "decode",
	"cache", "usage", "stays", "bounded", "when", "streams", "finish", "early",
	"or", "late", "in", "order", "every", "chunk", "arrives", "now",
}

// tokenText is generated token i's text (0-based): a word, space-separated
// from the previous one.
func tokenText(i int) string {
	w := fillerWords[i%len(fillerWords)]
	if i == 0 {
		return w
	}
	return " " + w
}

// appendTokens appends the text of tokens [from, to) to dst.
func appendTokens(dst []byte, from, to int) []byte {
	for i := from; i < to; i++ {
		dst = append(dst, tokenText(i)...)
	}
	return dst
}
