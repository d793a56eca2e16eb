package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/anvil-llm/anvil/router/ident"
)

// The roles (issue 27). Three kinds of token: caller tokens open the OpenAI API (/v1), observer tokens
// open the read-only surfaces (/metrics, the admin API's GET views, the status page's reads), and the
// admin token opens every surface but /v1. A caller token may carry a label (auth.callers), the name
// it has in decision records, metrics and the access log; the token itself is never shown.

// EnvObserverTokens supplies comma-separated observer tokens; it replaces auth.observer_tokens and
// auth.observer_tokens_file (which is then not read), as ANVIL_API_TOKENS replaces the caller tokens.
const EnvObserverTokens = "ANVIL_OBSERVER_TOKENS"

// MaxLabelledCallers bounds auth.callers, so the caller label stays a small label set.
const MaxLabelledCallers = 64

// Caller is one caller token and its label: auth.callers' label, or "" for a token of caller_tokens,
// caller_tokens_file or ANVIL_API_TOKENS (the server names those by position, caller-N).
type Caller struct {
	Label string
	Token Secret
}

// labelledCaller is one resolved entry of auth.callers; source is where its token came from ("file
// PATH", "environment VAR", "inline"), for Normalized and Diff, never the value.
type labelledCaller struct {
	label  string
	token  Secret
	source string
}

// reservedLabel matches the labels the server derives itself: caller-N for unlabelled tokens and
// "other" for callers past the metrics' bound. A configured label may not take one.
var reservedLabel = regexp.MustCompile(`^(other|caller-[0-9]+)$`)

const labelRule = idRule + ", and not other or caller-N (reserved for unlabelled tokens)"

// labelledCallers resolves auth.callers: each entry a unique label in the ID grammar and exactly one
// source of its token (token_file holding exactly one token, token_env naming a set variable, token).
func labelledCallers(docs []CallerDoc, src Sources) ([]labelledCaller, error) {
	if len(docs) > MaxLabelledCallers {
		return nil, invalidf("auth.callers", "at most %d labelled callers", MaxLabelledCallers)
	}
	seen := make(map[string]bool, len(docs))
	out := make([]labelledCaller, 0, len(docs))
	for i, d := range docs {
		path := fmt.Sprintf("auth.callers[%d]", i)
		switch {
		case d.Label == nil:
			return nil, invalid(path+".label", "is required")
		case !ident.ValidID(*d.Label) || reservedLabel.MatchString(*d.Label):
			return nil, invalid(path+".label", labelRule)
		case seen[*d.Label]:
			return nil, invalid(path+".label", "duplicate label")
		}
		seen[*d.Label] = true
		cand, source, err := callerSource(d, path, src)
		if err != nil {
			return nil, err
		}
		if !validToken(cand.value) {
			return nil, invalid(cand.path, cand.note+tokenRule)
		}
		out = append(out, labelledCaller{label: *d.Label, token: Secret{value: cand.value}, source: source})
	}
	return out, nil
}

// callerSource reads the one token source an auth.callers entry names.
func callerSource(d CallerDoc, path string, src Sources) (numbered, string, error) {
	n := 0
	for _, p := range []*string{d.TokenFile, d.TokenEnv, d.Token} {
		if p != nil {
			n++
		}
	}
	if n != 1 {
		return numbered{}, "", invalid(path, "needs exactly one of token_file, token_env or token")
	}
	switch {
	case d.TokenFile != nil:
		lines, err := src.tokenFile(*d.TokenFile, path+".token_file")
		if err != nil {
			return numbered{}, "", err
		}
		if len(lines) != 1 {
			return numbered{}, "", invalid(path+".token_file", "must contain exactly one token")
		}
		return lines[0], "file " + *d.TokenFile, nil
	case d.TokenEnv != nil:
		name := *d.TokenEnv
		if !envNamePattern.MatchString(name) {
			return numbered{}, "", invalid(path+".token_env", envNameRule)
		}
		v, ok := src.lookup(name)
		if !ok || v == "" {
			return numbered{}, "", invalid(path+".token_env", "environment variable is not set")
		}
		return numbered{path: path + ".token_env", value: v}, "environment " + name, nil
	default:
		return numbered{path: path + ".token", value: *d.Token}, "inline", nil
	}
}

// observerTokens resolves the observer tokens: ANVIL_OBSERVER_TOKENS, else observer_tokens_file,
// else observer_tokens. None is valid: the read-only role is then unused.
func observerTokens(r *AuthDoc, src Sources) ([]Secret, string, error) {
	if r.ObserverTokensFile != nil && len(r.ObserverTokens) > 0 {
		return nil, "", invalid("auth", "observer_tokens and observer_tokens_file are mutually exclusive")
	}
	var cands []numbered
	source := "inline"
	switch v, ok := src.lookup(EnvObserverTokens); {
	case ok && v != "":
		for i, part := range strings.Split(v, ",") {
			cands = append(cands, numbered{path: fmt.Sprintf("%s[%d]", EnvObserverTokens, i), value: strings.TrimSpace(part)})
		}
		source = "environment " + EnvObserverTokens
	case r.ObserverTokensFile != nil:
		lines, err := src.tokenFile(*r.ObserverTokensFile, "auth.observer_tokens_file")
		if err != nil {
			return nil, "", err
		}
		if len(lines) == 0 {
			return nil, "", invalid("auth.observer_tokens_file", "contains no tokens")
		}
		cands, source = lines, "file "+*r.ObserverTokensFile
	default:
		for i, v := range r.ObserverTokens {
			cands = append(cands, numbered{path: fmt.Sprintf("auth.observer_tokens[%d]", i), value: v})
		}
	}
	if len(cands) > maxCallerToken {
		return nil, "", invalidf("auth", "at most %d observer tokens", maxCallerToken)
	}
	toks, err := checkTokens(cands)
	if len(toks) == 0 {
		source = ""
	}
	return toks, source, err
}

// distinctRoles refuses a token held by two roles (or by two callers): a token's role must be one,
// so a caller never holds observer or admin rights by accident. Each error names the later key.
func distinctRoles(a authConfig, adminPath string, observerPaths []string) error {
	seen := make(map[string]bool, len(a.callerTokens)+len(a.callers))
	for _, t := range a.callerTokens {
		seen[t.value] = true
	}
	for i, c := range a.callers {
		if seen[c.token.value] {
			return invalid(fmt.Sprintf("auth.callers[%d]", i), "duplicate token (already a caller token)")
		}
		seen[c.token.value] = true
	}
	for i, t := range a.observerTokens {
		if seen[t.value] {
			return invalid(observerPaths[i], "must differ from every caller token")
		}
	}
	if a.adminToken.IsZero() {
		return nil
	}
	if seen[a.adminToken.value] {
		return invalid(adminPath, "must differ from every caller token")
	}
	for _, t := range a.observerTokens {
		if t.value == a.adminToken.value {
			return invalid(adminPath, "must differ from every observer token")
		}
	}
	return nil
}

// observerPaths names each observer token's key for distinctRoles' errors.
func observerPaths(r *AuthDoc, source string, n int) []string {
	out := make([]string, n)
	for i := range out {
		switch {
		case strings.HasPrefix(source, "environment "):
			out[i] = fmt.Sprintf("%s[%d]", EnvObserverTokens, i)
		case strings.HasPrefix(source, "file "):
			out[i] = "auth.observer_tokens_file"
		default:
			out[i] = fmt.Sprintf("auth.observer_tokens[%d]", i)
		}
	}
	return out
}

// upstreamKeysDistinct refuses a tier whose upstream key is a router token (a callers entry's
// token_env and a tier's api_key_env naming one variable, say): it would be sent upstream.
func upstreamKeysDistinct(c Config) error {
	tokens := append(c.CallerTokens(), c.auth.observerTokens...)
	tokens = append(tokens, c.auth.adminToken)
	for i, t := range c.tiers {
		for _, tok := range tokens {
			if !t.APIKey.IsZero() && t.APIKey.value == tok.value {
				return invalid(fmt.Sprintf("tiers[%d].api_key_env", i), "must not hold a router token")
			}
		}
	}
	return nil
}
