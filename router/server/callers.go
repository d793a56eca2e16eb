package server

import (
	"crypto/sha256"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/config"
)

// Callers, as the fair body budget, its metrics, the decision records and the access log see them. A
// caller is known by its label: auth.callers' label for a labelled token, else its token's position in
// the configured list ("caller-1" is the first token of ANVIL_API_TOKENS, of caller_tokens_file's
// token lines, or of caller_tokens; unlabelled tokens come first in the list). The label comes from
// the configuration only, never from the token, so nothing of a token reaches a label, a log line or
// an answer. Every front-door request is authenticated (a config without a caller token is refused),
// so every body has a caller.

// maxCallerLabels bounds the positional labels: unlabelled callers past it share the label "other",
// so the label set stays small (at most config.MaxLabelledCallers + maxCallerLabels + 1 values)
// however many tokens are configured.
const maxCallerLabels = 32

// otherCaller is the label of unlabelled callers past maxCallerLabels, and of a body whose caller the
// middleware did not record (none today: every /v1 route authenticates).
const otherCaller = "other"

const ctxCaller = "anvil.caller" // the index of the matched caller token in its generation's list

// callerLabel is the positional label of the unlabelled caller token at index i.
func callerLabel(i int) string {
	if i < 0 || i >= maxCallerLabels {
		return otherCaller
	}
	return "caller-" + strconv.Itoa(i+1)
}

// callerLabels is each caller's label, in order: its configured label, else its positional one.
func callerLabels(callers []config.Caller) []string {
	out := make([]string, len(callers))
	for i, c := range callers {
		if out[i] = c.Label; c.Label == "" {
			out[i] = callerLabel(i)
		}
	}
	return out
}

// labelSet lists every label the generation's callers can have, each once, in order, then "other":
// the metrics' bounded set.
func (g *generation) labelSet() []string {
	out := make([]string, 0, len(g.labels)+1)
	for _, l := range g.labels {
		if l != otherCaller && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return append(out, otherCaller)
}

// tokenKey is a caller token's identity across generations. It is a digest only so the generation
// does not keep a second copy of the token; it is never printed.
type tokenKey [sha256.Size]byte

// adoptHolders gives each of tokens its budget holder: the previous generation's for a token it also
// had (a reload that keeps a token keeps what its bodies in flight hold), a new one otherwise.
func adoptHolders(prev *generation, tokens []config.Secret) ([]tokenKey, []*holder) {
	old := map[tokenKey]*holder{}
	if prev != nil {
		for i, k := range prev.callerKeys {
			old[k] = prev.holders[i]
		}
	}
	keys, holders := make([]tokenKey, len(tokens)), make([]*holder, len(tokens))
	for i, t := range tokens {
		keys[i] = sha256.Sum256([]byte(t.Reveal()))
		if h, ok := old[keys[i]]; ok {
			holders[i] = h
		} else {
			holders[i] = &holder{}
		}
	}
	return keys, holders
}

// callerOf is the holder and label of the request's caller, as authenticate recorded it.
func (s *Server) callerOf(c *gin.Context, g *generation) (*holder, string) {
	if i, ok := c.Get(ctxCaller); ok {
		if i, ok := i.(int); ok && i >= 0 && i < len(g.holders) {
			return g.holders[i], g.labels[i]
		}
	}
	return s.unknownCaller, otherCaller
}
