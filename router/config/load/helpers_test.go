package load

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// Test credentials. They are long and distinctive so a leak is easy to grep.
const (
	callerTok  = "caller-SECRET-aaaaaaaaaaaaaaaa"
	callerTok2 = "caller-SECRET-bbbbbbbbbbbbbbbb"
	adminTok   = "admin-SECRET-cccccccccccccccccc"
	apiKey     = "sk-SECRET-upstream-key-dddddddd"

	observerTok = "observer-SECRET-eeeeeeeeeeeeeee"
	labelTok    = "label-SECRET-ffffffffffffffffff"
	labelTok2   = "label-SECRET-gggggggggggggggggg"

	labelRule   = "must match [a-z0-9][a-z0-9._-]{0,63}, and not other or caller-N (reserved for unlabelled tokens)"
	envNameRule = "must match [A-Z_][A-Z0-9_]{0,127}"
)

// manyCallers is n labelled callers with distinct labels and tokens.
func manyCallers(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"label": "team-" + strconv.Itoa(i), "token": "label-SECRET-" + strings.Repeat("x", 16) + strconv.Itoa(i)}
	}
	return out
}

// baseDoc is a small valid configuration touching every tier shape: a
// capacity replica tier, a round-robin replica tier and a direct tier.
const baseDoc = `
listen: 127.0.0.1:9000
auth:
  caller_tokens: ["` + callerTok + `"]
  admin_token: "` + adminTok + `"
aliases:
  - {id: chat, tier: fast}
  - {id: meta-llama/llama-3.1-8b:latest, tier: fast}
  - {id: rr, tier: slow}
  - {id: big, tier: big}
tiers:
  - id: fast
    kind: replica
    served_model: meta-llama/Llama-3.1-8B-Instruct
    gates: {max_context_tokens: 8192, max_output_tokens: 2048, tools_allowed: true}
    host: 127.0.0.1
    provenance: vllm 0.12.0, same weights
    replica_strategy: capacity
    members:
      - {id: m0, endpoint: "http://127.0.0.1:9001", max_concurrency: 4}
      - {id: m1, endpoint: "http://127.0.0.1:9002", max_concurrency: 6}
  - id: slow
    kind: replica
    served_model: qwen
    gates: {max_context_tokens: 4096}
    host: gpu-box.local
    provenance: qwen on gpu-box
    members:
      - {id: a, endpoint: "http://gpu-box.local:8001"}
      - {id: b, endpoint: "http://GPU-BOX.local:8002", max_concurrency: 2}
  - id: big
    kind: direct
    served_model: gpt-4o
    gates: {max_context_tokens: 128000, max_output_tokens: 4096, media_allowed: true}
    max_concurrency: 10
    endpoint: https://api.example.com/v1/
    api_key_env: BIG_API_KEY
`

// envMap turns a map into a LookupEnv function.
func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// baseEnv supplies the direct tier's API key.
func baseEnv() map[string]string { return map[string]string{"BIG_API_KEY": apiKey} }

// doc is a YAML document as a mutable tree, for table-driven edits.
type doc map[string]any

func loadDoc(t testing.TB, src string) doc {
	t.Helper()
	// Decode into a plain map: yaml.v3 would give nested mappings the
	// named type doc, which walk does not expect.
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(src), &m))
	return doc(m)
}

func (d doc) bytes(t testing.TB) []byte {
	t.Helper()
	b, err := yaml.Marshal(map[string]any(d))
	require.NoError(t, err)
	return b
}

var pathPart = regexp.MustCompile(`^([a-z_]+)((?:\[\d+\])*)$`)

// walk follows a dotted path like tiers[1].members[0].id and calls fn with
// the container and final key (string for mappings, int for lists).
func (d doc) walk(t testing.TB, path string, fn func(container any, key any)) {
	t.Helper()
	var cur any = map[string]any(d)
	parts := strings.Split(path, ".")
	for pi, part := range parts {
		m := pathPart.FindStringSubmatch(part)
		require.NotNil(t, m, "bad path part %q", part)
		keys := []any{m[1]}
		for _, idx := range regexp.MustCompile(`\d+`).FindAllString(m[2], -1) {
			n, _ := strconv.Atoi(idx)
			keys = append(keys, n)
		}
		for ki, k := range keys {
			if pi == len(parts)-1 && ki == len(keys)-1 {
				fn(cur, k)
				return
			}
			switch c := cur.(type) {
			case map[string]any:
				next, ok := c[k.(string)]
				if !ok {
					next = map[string]any{}
					c[k.(string)] = next
				}
				cur = next
			case []any:
				cur = c[k.(int)]
			default:
				t.Fatalf("cannot descend into %T at %q", cur, part)
			}
		}
	}
}

func (d doc) set(t testing.TB, path string, v any) doc {
	t.Helper()
	d.walk(t, path, func(c any, k any) {
		switch c := c.(type) {
		case map[string]any:
			c[k.(string)] = v
		case []any:
			c[k.(int)] = v
		}
	})
	return d
}

func (d doc) del(t testing.TB, path string) doc {
	t.Helper()
	d.walk(t, path, func(c any, k any) {
		m, ok := c.(map[string]any)
		require.True(t, ok, "del needs a mapping key: %s", path)
		delete(m, k.(string))
	})
	return d
}

// members builds n member mappings on host with the given ceiling (0 = none).
func members(host string, n int, ceiling int) []any {
	out := make([]any, n)
	for i := range n {
		m := map[string]any{"id": "m" + strconv.Itoa(i), "endpoint": "http://" + host + ":" + strconv.Itoa(10000+i)}
		if ceiling > 0 {
			m["max_concurrency"] = ceiling
		}
		out[i] = m
	}
	return out
}

func mustParse(t testing.TB, data []byte, env map[string]string) config.Config {
	t.Helper()
	c, err := Parse(data, envMap(env))
	require.NoError(t, err)
	return c
}

// tokenRule is the fixed message for a malformed bearer token, spelled out so a change to it fails here.
const tokenRule = "must be a bearer token of 16-512 characters from A-Z a-z 0-9 - . _ ~ + / with optional trailing ="
