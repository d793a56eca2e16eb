package config

import (
	"bytes"
	"fmt"
	"strings"
)

// Environment variables read by Load (and by Parse through its lookup).
// An empty value counts as unset.
const (
	EnvListen     = "ANVIL_LISTEN"      // overrides listen
	EnvAPIToken   = "ANVIL_API_TOKEN"   // one caller token
	EnvAPITokens  = "ANVIL_API_TOKENS"  // comma-separated caller tokens
	EnvAdminToken = "ANVIL_ADMIN_TOKEN" // the admin token
	// EnvObserverTokens (roles.go) supplies the observer tokens.
)

// MaxTokenFileBytes bounds a token file.
const MaxTokenFileBytes = 64 << 10

// buildAuth resolves the credentials. Precedence per credential:
// environment, then file, then inline value. When the environment supplies
// a credential the file-level setting is ignored entirely (a token file is
// not even read), so a deployment can override secrets without editing
// the document.
func buildAuth(r *AuthDoc, src Sources) (authConfig, error) {
	if r == nil {
		r = &AuthDoc{}
	}
	if r.CallerTokensFile != nil && len(r.CallerTokens) > 0 {
		return authConfig{}, invalid("auth", "caller_tokens and caller_tokens_file are mutually exclusive")
	}
	if r.AdminTokenFile != nil && r.AdminToken != nil {
		return authConfig{}, invalid("auth", "admin_token and admin_token_file are mutually exclusive")
	}
	var a authConfig
	var err error
	if a.callerTokens, a.callerSource, err = callerTokens(r, src); err != nil {
		return authConfig{}, err
	}
	if a.callers, err = labelledCallers(r.Callers, src); err != nil {
		return authConfig{}, err
	}
	if len(a.callerTokens)+len(a.callers) == 0 {
		return authConfig{}, invalid("auth", "at least one caller token is required (caller_tokens, caller_tokens_file, callers or "+EnvAPITokens+")")
	}
	if len(a.callerTokens)+len(a.callers) > maxCallerToken {
		return authConfig{}, invalidf("auth", "at most %d caller tokens", maxCallerToken)
	}
	if a.observerTokens, a.observerSource, err = observerTokens(r, src); err != nil {
		return authConfig{}, err
	}
	var adminPath string
	if a.adminToken, a.adminSource, adminPath, err = adminToken(r, src); err != nil {
		return authConfig{}, err
	}
	if err := distinctRoles(a, adminPath, observerPaths(r, a.observerSource, len(a.observerTokens))); err != nil {
		return authConfig{}, err
	}
	return a, nil
}

// numbered is one candidate token with where its errors point: path is the
// setting or variable, note locates it further ("line 7: " in a file).
type numbered struct {
	path  string
	note  string
	value string
}

func callerTokens(r *AuthDoc, src Sources) ([]Secret, string, error) {
	var envToks []numbered
	if v, ok := src.lookup(EnvAPITokens); ok && v != "" {
		for i, part := range strings.Split(v, ",") {
			envToks = append(envToks, numbered{path: fmt.Sprintf("%s[%d]", EnvAPITokens, i), value: strings.TrimSpace(part)})
		}
	}
	if v, ok := src.lookup(EnvAPIToken); ok && v != "" {
		envToks = append(envToks, numbered{path: EnvAPIToken, value: v})
	}
	switch {
	case len(envToks) > 0:
		toks, err := checkTokens(envToks)
		return toks, "environment " + EnvAPITokens + "/" + EnvAPIToken, err
	case r.CallerTokensFile != nil:
		lines, err := src.tokenFile(*r.CallerTokensFile, "auth.caller_tokens_file")
		if err != nil {
			return nil, "", err
		}
		if len(lines) == 0 {
			return nil, "", invalid("auth.caller_tokens_file", "contains no tokens")
		}
		toks, err := checkTokens(lines)
		return toks, "file " + *r.CallerTokensFile, err
	default:
		inline := make([]numbered, len(r.CallerTokens))
		for i, v := range r.CallerTokens {
			inline[i] = numbered{path: fmt.Sprintf("auth.caller_tokens[%d]", i), value: v}
		}
		toks, err := checkTokens(inline)
		return toks, "inline", err
	}
}

// checkTokens validates each token and refuses duplicates. Errors name
// where the token came from, never the token.
func checkTokens(cands []numbered) ([]Secret, error) {
	seen := make(map[string]bool, len(cands))
	out := make([]Secret, 0, len(cands))
	for _, c := range cands {
		if !validToken(c.value) {
			return nil, invalid(c.path, c.note+tokenRule)
		}
		if seen[c.value] {
			return nil, invalid(c.path, c.note+"duplicate token")
		}
		seen[c.value] = true
		out = append(out, Secret{value: c.value})
	}
	return out, nil
}

// adminToken returns the admin token, its source and the path its errors
// name. No admin token is valid: the admin API is then disabled.
func adminToken(r *AuthDoc, src Sources) (Secret, string, string, error) {
	var cand numbered
	var source string
	switch v, ok := src.lookup(EnvAdminToken); {
	case ok && v != "":
		cand, source = numbered{path: EnvAdminToken, value: v}, "environment "+EnvAdminToken
	case r.AdminTokenFile != nil:
		const path = "auth.admin_token_file"
		lines, err := src.tokenFile(*r.AdminTokenFile, path)
		if err != nil {
			return Secret{}, "", "", err
		}
		if len(lines) != 1 {
			return Secret{}, "", "", invalid(path, "must contain exactly one token")
		}
		cand, source = lines[0], "file "+*r.AdminTokenFile
	case r.AdminToken != nil:
		cand, source = numbered{path: "auth.admin_token", value: *r.AdminToken}, "inline"
	default:
		return Secret{}, "", "", nil
	}
	if !validToken(cand.value) {
		return Secret{}, "", "", invalid(cand.path, cand.note+tokenRule)
	}
	return Secret{value: cand.value}, source, cand.path, nil
}

// tokenFile reads a token file through src and splits it into tokens: one
// per line, surrounding whitespace trimmed, blank lines and lines starting
// with # skipped.
func (src Sources) tokenFile(name, path string) ([]numbered, error) {
	if !validPath(name) {
		return nil, invalid(path, "must be a file path of 1-4096 characters without control characters")
	}
	if src.ReadFile == nil {
		return nil, invalid(path, "token files are read only by the loader")
	}
	data, err := src.ReadFile(name)
	if err != nil {
		return nil, invalidCause(path, CannotRead("file", name, err), err)
	}
	if len(data) > MaxTokenFileBytes {
		return nil, invalidf(path, "file exceeds %d bytes", MaxTokenFileBytes)
	}
	var out []numbered
	for i, line := range bytes.Split(data, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		out = append(out, numbered{path: path, note: fmt.Sprintf("line %d: ", i+1), value: s})
	}
	return out, nil
}
